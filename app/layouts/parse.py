"""Encoding text -> (kind, params): a small reader for MLIR attribute syntax.

Accepts what Triton prints: ``#ttg.blocked<{sizePerThread = [1, 8], ...}>``,
nested parents (``parent = #ttg.blocked<...>``; aliases must already be
expanded), ``#ttg.padded_shared<[64:+4] {order = [1, 0], shape = [16, 64]}>``,
bare parameter lists (``#ttng.tensor_memory_encoding<blockM = 128, ...>``), and
the Triton 3.1 spellings (``#triton_gpu.*``, ``#triton_nvidia_gpu.*``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from app.layouts.errors import LayoutError

MAX_TEXT = 20_000
_DIALECTS = {"ttg": "ttg", "triton_gpu": "ttg", "ttng": "ttng", "triton_nvidia_gpu": "ttng", "amdg": "amdg",
             "amdgpu": "amdg", "gluon": "gluon"}
_TOKEN = re.compile(r"\s*(?:(#[A-Za-z_][\w]*\.[A-Za-z_]\w*)|(-?\d+)|([A-Za-z_][\w.]*)|(:\+)|(\S))")


@dataclass
class Encoding:
    kind: str  # "ttg.blocked", "ttg.slice", ... (3.1 dialect names normalised)
    params: dict = field(default_factory=dict)
    text: str = ""


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def peek(self) -> tuple[str, str] | None:
        m = _TOKEN.match(self.text, self.pos)
        if not m or m.end() == m.start():
            return None
        for kind, value in zip(("attr", "int", "ident", "pad", "punct"), m.groups()):
            if value is not None:
                return kind, value
        return None

    def next(self) -> tuple[str, str]:
        m = _TOKEN.match(self.text, self.pos)
        tok = self.peek()
        if tok is None or m is None:
            raise LayoutError(f"unexpected end of encoding text at {self.pos}")
        self.pos = m.end()
        return tok

    def expect(self, value: str) -> None:
        _kind, got = self.next()
        if got != value:
            raise LayoutError(f"expected {value!r} at {self.pos} in the encoding, found {got!r}")

    def at(self, value: str) -> bool:
        tok = self.peek()
        return tok is not None and tok[1] == value

    # -- grammar ----------------------------------------------------------------------
    def attribute(self) -> Encoding:
        start = self.pos
        kind, name = self.next()
        if kind != "attr":
            if kind == "punct" and name == "#":
                raise LayoutError("the encoding still names an alias: expand aliases first")
            raise LayoutError(f"expected an encoding like #ttg.blocked<...>, found {name!r}")
        dialect, _, short = name[1:].partition(".")
        if dialect not in _DIALECTS:
            raise LayoutError(f"unknown dialect {dialect!r}")
        enc = Encoding(f"{_DIALECTS[dialect]}.{short}")
        if self.at("<"):
            self.next()
            enc.params = self.body()
            self.expect(">")
        enc.text = self.text[start:self.pos].strip()
        return enc

    def body(self) -> dict:
        params: dict = {}
        if self.at("["):  # padded_shared: [interval:+pad, ...] {dict}
            self.next()
            pairs = []
            while not self.at("]"):
                interval = self.integer()
                self.expect(":+")
                pairs.append([interval, self.integer()])
                if self.at(","):
                    self.next()
            self.next()
            params["intervalPadding"] = pairs
        if self.at("{"):
            params.update(self.dictionary())
            if self.at(","):  # shared_linear: {bases}, alignment = 16
                self.next()
                params.update(self.pairs(">"))
        elif not self.at(">"):
            params.update(self.pairs(">"))
        return params

    def dictionary(self) -> dict:
        self.expect("{")
        out = self.pairs("}")
        self.expect("}")
        return out

    def pairs(self, end: str) -> dict:
        out: dict = {}
        while not self.at(end):
            kind, key = self.next()
            if kind != "ident":
                raise LayoutError(f"expected a parameter name in the encoding, found {key!r}")
            if self.at("="):
                self.next()
                out[key] = self.value()
            else:
                out[key] = True  # unit parameter
            if self.at(","):
                self.next()
            elif not self.at(end):
                raise LayoutError(f"expected ',' or {end!r} after {key!r}")
        return out

    def integer(self) -> int:
        kind, value = self.next()
        if kind != "int":
            raise LayoutError(f"expected an integer, found {value!r}")
        return int(value)

    def value(self):
        tok = self.peek()
        if tok is None:
            raise LayoutError("unexpected end of encoding text")
        kind, v = tok
        if kind == "attr":
            return self.attribute()
        if v == "[":
            self.next()
            items = []
            while not self.at("]"):
                items.append(self.value())
                if self.at(","):
                    self.next()
            self.next()
            return items
        if v == "{":
            return self.dictionary()
        self.next()
        if kind == "int":
            if self.at(":"):  # typed integer such as `4 : i32`
                self.next()
                self.next()
            return int(v)
        if kind == "ident":
            return {"true": True, "false": False}.get(v, v)
        raise LayoutError(f"unexpected {v!r} in the encoding")


def parse_encoding(text: str) -> Encoding:
    text = text.strip()
    if len(text) > MAX_TEXT:
        raise LayoutError(f"encoding text longer than {MAX_TEXT} characters")
    if not text:
        raise LayoutError("no encoding given")
    r = _Reader(text)
    enc = r.attribute()
    if r.peek() is not None:
        raise LayoutError(f"unexpected text after the encoding at {r.pos}")
    return enc


def parse_shape(text: str) -> list[int]:
    parts = text.strip().lower().split("x")
    # isascii: "²" and other Unicode digits pass isdigit() but not int()
    if not parts or not all(p.isascii() and p.isdigit() and len(p) <= 9 for p in parts):
        raise LayoutError(f"shape {text!r} is not like 64x128")
    return [int(p) for p in parts]
