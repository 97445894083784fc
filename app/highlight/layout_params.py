"""Reading an encoding's parameters as printed (``{sizePerThread = [1, 8], order = [1, 0]}``):
bracket matching, splitting at top-level commas, values as ints, bools, lists and dicts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from app.highlight.layout_model import Layout

_OPEN = {"<": ">", "[": "]", "{": "}", "(": ")"}


def matching_close(text: str, start: int) -> int | None:
    """Index of the bracket closing ``text[start]``, skipping strings and nested brackets."""
    stack: list[str] = []
    index = start
    while index < len(text):
        char = text[index]
        if char == '"':
            index += 1
            while index < len(text) and text[index] != '"':
                index += 2 if text[index] == "\\" else 1
        elif char in _OPEN:
            stack.append(_OPEN[char])
        elif stack and char == stack[-1]:
            stack.pop()
            if not stack:
                return index
        index += 1
    return None


def split_top(text: str, separator: str = ",") -> list[str]:
    """Split on ``separator`` outside brackets and strings."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    in_string = False
    for index, char in enumerate(text):
        if in_string:
            current.append(char)
            if char == '"' and text[index - 1] != "\\":
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in _OPEN:
            depth += 1
        elif char in ">]})" and depth > 0:
            depth -= 1
        elif char == separator and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    tail = "".join(current).strip()
    if tail:
        parts.append(tail)
    return parts


def parse_params(inner: str) -> list[tuple[str, str]]:
    """``{a = 1, b = [2]}, c = 3`` or ``[32:+4] {order = ...}`` → [(name, value text)]."""
    params: list[tuple[str, str]] = []
    inner = inner.strip()
    # padded_shared: `[32:+4, 64:+8] {order = ...}`: the leading interval list has no name
    if inner.startswith("["):
        close = matching_close(inner, 0)
        if close is not None and ":" in inner[: close + 1]:
            params.append(("intervals", inner[: close + 1]))
            inner = inner[close + 1 :].strip().lstrip(",").strip()
    for part in split_top(inner):
        if part.startswith("{") and part.endswith("}"):
            params.extend(parse_params(part[1:-1]))
            continue
        name, sep, value = part.partition("=")
        if sep and re.fullmatch(r"\s*[\w$.\"-]+\s*", name):
            params.append((name.strip().strip('"'), value.strip()))
        elif part:
            params.append((part, "true"))  # a unit attribute
    return params


def parse_value(text: str):
    """Parse a printed attribute value into ints, bools, lists and strings."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [parse_value(part) for part in split_top(text[1:-1])]
    if text.startswith("{") and text.endswith("}"):
        result = {}
        for part in split_top(text[1:-1]):
            name, _, value = part.partition("=")
            result[name.strip()] = parse_value(value)
        return result
    if re.fullmatch(r"-?\d+(?:\s*:\s*i\d+)?", text):
        return int(text.split(":")[0])
    if text in ("true", "false"):
        return text == "true"
    return text


def parse_ints(text: str) -> list[int] | None:
    value = parse_value(text)
    if isinstance(value, list) and all(isinstance(item, int) for item in value):
        return value
    return None


def parse_bases(text: str) -> list[list[int]] | None:
    value = parse_value(text)
    if isinstance(value, list) and all(
        isinstance(item, list) and all(isinstance(x, int) for x in item) for item in value
    ):
        return value
    return None


@dataclass
class Context:
    """What an explainer sees of one encoding: its parameters (printed text by name, read as numbers
    on demand) and the module's aliases, so a parent named by alias can be described."""

    aliases: Mapping[str, Layout]
    params: dict[str, str]

    def ints(self, name: str) -> list[int] | None:
        return parse_ints(self.params[name]) if name in self.params else None

    def int(self, name: str) -> int | None:
        value = parse_value(self.params.get(name, ""))
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def flag(self, name: str) -> bool | None:
        value = parse_value(self.params.get(name, ""))
        return value if isinstance(value, bool) else None
