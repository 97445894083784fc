"""A drop-in speed-up for Pygments' ``RegexLexer``.

``RegexLexer`` tries a state's rules one by one from Python at every position. Here each
state's rules are joined into one compiled alternation, so the regex engine picks the first
rule that matches, in the same order and with the same result, and Python runs once per
token. Rules, ``bygroups`` actions and state transitions are the ones Pygments compiled from
``tokens``; only the loop differs (the tests compare both loops on corpus text).

Restrictions on rules: no back-references by number and no named groups, since every rule's
groups are renumbered inside the alternation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pygments.lexer import RegexLexer
from pygments.token import Error, Whitespace, _TokenType

__all__ = ["FastRegexLexer"]


class _GroupView:
    """What a ``bygroups`` callback sees: one rule's groups inside the combined match."""

    __slots__ = ("_count", "_match", "_offset")

    def __init__(self, match: re.Match[str], offset: int, count: int) -> None:
        self._match = match
        self._offset = offset
        self._count = count

    def group(self, index: int = 0) -> str | None:
        return self._match.group(self._offset + index)

    def start(self, index: int = 0) -> int:
        return self._match.start(self._offset + index)

    def end(self, index: int = 0) -> int:
        return self._match.end(self._offset + index)

    def groups(self) -> tuple[str | None, ...]:
        return self._match.groups()[self._offset : self._offset + self._count]


_GLOBAL_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")


def _scoped_flags(pattern: str) -> str:
    """A rule's leading global flags, ``(?i)rest``, scoped to the rule as ``(?i:rest)``: inside the
    alternation they would no longer be at the start (an error) nor apply to this rule only."""
    match = _GLOBAL_FLAGS.match(pattern)
    return f"(?{match.group(1)}:{pattern[match.end():]})" if match else pattern


# (combined match function, {outer group index: (action, new_state, inner group count)})
_StateTable = tuple[Any, dict[int, tuple[Any, Any, int]]]


class FastRegexLexer(RegexLexer):
    """``RegexLexer`` with one combined regex per state; the same tokens, several times faster."""

    @classmethod
    def _combined_tables(cls) -> dict[str, _StateTable]:
        cached = cls.__dict__.get("_fast_tables")
        if cached is not None:
            return cached
        tables: dict[str, _StateTable] = {}
        for state, rules in cls._tokens.items():
            parts: list[str] = []
            actions: dict[int, tuple[Any, Any, int]] = {}
            group = 1
            for rexmatch, action, new_state in rules:
                compiled = rexmatch.__self__
                parts.append("(" + _scoped_flags(compiled.pattern) + ")")
                actions[group] = (action, new_state, compiled.groups)
                group += 1 + compiled.groups
            tables[state] = (re.compile("|".join(parts), cls.flags).match, actions)
        cls._fast_tables = tables
        return tables

    def get_tokens_unprocessed(
        self, text: str, stack: tuple[str, ...] = ("root",)
    ) -> Iterator[tuple[int, _TokenType, str]]:
        tables = self._combined_tables()
        pos = 0
        statestack = list(stack)
        match_state, actions = tables[statestack[-1]]
        token_type = _TokenType
        while True:
            m = match_state(text, pos)
            if m is None:
                if pos >= len(text):
                    return
                if text[pos] == "\n":
                    statestack = ["root"]
                    match_state, actions = tables["root"]
                    yield pos, Whitespace, "\n"
                else:
                    yield pos, Error, text[pos]
                pos += 1
                continue
            outer = m.lastindex
            action, new_state, count = actions[outer]
            if action is not None:
                if type(action) is token_type:
                    value = m.group(outer)
                    yield pos, action, value
                else:
                    yield from action(self, _GroupView(m, outer, count))
            end = m.end()
            if end == pos and new_state is None:
                # an empty match that changes no state would match again forever (Pygments'
                # own loop would spin here); a rule bug, so say so
                raise RuntimeError(f"empty match without a state change in {type(self).__name__}")
            pos = end
            if new_state is not None:
                if isinstance(new_state, tuple):
                    for state in new_state:
                        if state == "#pop":
                            if len(statestack) > 1:
                                statestack.pop()
                        elif state == "#push":
                            statestack.append(statestack[-1])
                        else:
                            statestack.append(state)
                elif isinstance(new_state, int):
                    if abs(new_state) >= len(statestack):
                        del statestack[1:]
                    else:
                        del statestack[new_state:]
                elif new_state == "#push":
                    statestack.append(statestack[-1])
                else:  # pragma: no cover - Pygments validates states at class creation
                    raise ValueError(f"wrong state def: {new_state!r}")
                match_state, actions = tables[statestack[-1]]
