"""Autotuning results printed in a log, read line by line as the log streams by (never held).

Forms read:
- Triton's ``TRITON_PRINT_AUTOTUNING=1`` (runtime/autotuner.py), one line up to 3.4:
  ``Triton autotuning for function F finished after 1.23s; best config selected: CFG;`` (some builds
  add ``key info: K,`` or ``config key: ..., benchmark key: ...,``), and from 3.5 four lines:
  ``Triton autotuning for function F,`` / ``with key as K,`` / ``finished after 1.23s,`` /
  ``best config selected: CFG;``; plus ``Autotuning kernel F with config CFG`` before each benchmark.
  A config that cannot run (``OutOfResources``, ``CompileTimeAssertionFailure``, ``PTXASError``) is
  followed by ``Autotuning failed with MESSAGE``; its choice is kept with ``status: "failed"``.
  CFG is ``Config.__str__``: ``BLOCK_M: 128, ..., num_warps: 8, num_ctas: 1, num_stages: 3, maxnreg: None``.
  A program printing ``kernel.best_config`` itself (``... best BLOCK_M: 128, ..., maxnreg: None``) is
  read the same way, as a session without a function name.
- torch.compile max-autotune (torch/_inductor/select_algorithm.py): ``AUTOTUNE mm(1024x512, 512x512)``,
  optional ``strides:`` / ``dtypes:`` lines, then one line a choice,
  ``  triton_mm_71 0.0189 ms 100.0% BLOCK_K=128, ..., num_warps=4`` (or ``inf ms``, or
  ``<DIVIDED BY ZERO ERROR>``), closed by ``SingleProcess AUTOTUNE benchmarking takes ...``. Other
  threads' dump text may be interleaved into these lines, so choices are searched for inside a line,
  not matched at its start; a choice followed by other text on its line is flagged ``damaged`` (its
  description may be cut), unless the next line is the rest of it (a whole line written into the
  middle of it), which is then joined back.

A cheap prefilter (:func:`may_hold`) keeps the regular expressions off the lines that cannot match.
"""

from __future__ import annotations

import re
from typing import Any

_TRITON_HEAD = re.compile(r"Triton autotuning for function (\w+)(.*)")
_FINISHED = re.compile(r"finished after ([\d.]+)s")
_KEY = re.compile(r"(?:with key as|key info:) (.*?),?\s*$")
_BEST = re.compile(r"best(?: config selected)?:? ((?:[\w.]+: [^,;]*, )*num_warps: \d+, num_ctas: \d+, "
                   r"num_stages: \d+(?:, maxnreg: \w+)?)")
_BENCH = re.compile(r"Autotuning kernel (\w+) with config (.*?num_warps: \d+.*?)\s*$")
_FAILED = re.compile(r"Autotuning failed with (.*?)\s*$")
_TABLE = re.compile(r"AUTOTUNE (\w+)\(([^)]*)\)")
_CHOICE = re.compile(r"(?:^|\s)([A-Za-z_][\w.]*) (inf|nan|\d+(?:\.\d+)?) ?(ms|s) (?:(\d+(?:\.\d+)?)%|<DIVIDED BY ZERO ERROR>)"
                     r"((?: [A-Za-z_]\w*=[^,\s]+,?)*)")
_TAKES = re.compile(r"AUTOTUNE (?:benchmarking )?takes ([\d.]+) seconds")
_PAIR = re.compile(r"([A-Za-z_]\w*)=([^,\s]+)")
# What is left of a description cut by another thread's output, and the rest of it on the next line.
_FRAGMENT = re.compile(r"^ ?(?:[A-Za-z_]\w*(?:=[^,\s]*)?(?:, ?[A-Za-z_]\w*(?:=[^,\s]*)?)*)?,? ?$")
_FAILURE_LINES = 40  # lines of a failure's source excerpt read for its message, at most
_REST = re.compile(r"^[\w.'\"=-]*(?:, [A-Za-z_]\w*=[^,\s]+)*,?\s*$")


def may_hold(line: str) -> bool:
    """Whether a line can hold anything read here (a substring test, no regex)."""
    return "AUTOTUNE" in line or " ms " in line or "utotuning" in line or "num_warps: " in line


def _value(text: str) -> Any:
    text = text.strip().strip("'\"")
    if text.lstrip("-").isascii() and text.lstrip("-").isdigit() and len(text) <= 18:
        return int(text)
    if text in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[text]
    return text


def parse_config(text: str) -> dict[str, Any]:
    """``Config.__str__`` (``k: v, ...``) or inductor's description (``k=v, ...``) as a dict."""
    out: dict[str, Any] = {}
    if ": " in text and "=" not in text.split(",")[0]:
        for item in text.split(", "):
            key, _, value = item.partition(": ")
            if key and value:
                out[key.strip()] = _value(value)
    else:
        for key, value in _PAIR.findall(text):
            out[key] = _value(value)
    return out


class AutotuneScanner:
    """Feed it lines (:meth:`feed`); :attr:`entries` then holds one dict per table or session:
    {"kind": "triton" | "inductor", "kernel" | "op", "shapes", "key", "seconds", "choices": [...],
    "best_config", "line"}."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self._session: dict[str, Any] | None = None  # a Triton session whose lines are still coming
        self._table: dict[str, Any] | None = None
        self._benchmarked: dict[str, list[dict]] = {}  # kernel -> configs benchmarked since its last result
        self._last_bench: dict | None = None  # the config benchmarked last: a failure line names no kernel
        self._cut: tuple[dict, str | None, int] | None = None  # a choice whose line other output ran into
        self._failing: dict | None = None  # a failed config whose message goes on over the next lines

    def _rejoin(self, number: int, line: str) -> bool:
        """The line after a choice that other output ran into: when it is the rest of the choice's
        description (the other thread wrote a whole line into the middle of it), join the two."""
        choice, fragment, at = self._cut  # type: ignore[misc]
        self._cut = None
        if fragment is None or number != at + 1 or not line.strip() or not _REST.match(line):
            return False
        choice["config"] = parse_config(fragment + line.strip())
        choice.pop("damaged", None)
        choice["rejoined"] = number
        return True

    def _failure_goes_on(self, line: str) -> bool:
        """A compile-time failure prints `at 5:4:`, the source lines, a caret and then the message (a
        static assertion's text): the message's last line is kept with its first."""
        failing = self._failing
        assert failing is not None
        if line.startswith(("Autotuning ", "Triton autotuning", "// -----//", "AUTOTUNE")) \
                or failing["lines"] >= _FAILURE_LINES:
            self._failing = None
            return False
        failing["lines"] += 1
        if line.strip() and line.strip() != "^":
            failing["last"] = line.strip()
            failing["choice"]["error"] = f"{failing['first']} {failing['last']}"
        return True

    def feed(self, number: int, line: str) -> None:
        if self._cut is not None and self._rejoin(number, line):
            return
        if self._failing is not None and self._failure_goes_on(line):
            return
        if self._session is None and not may_hold(line):  # a Triton session's next lines hold none of it
            return
        if "utotuning" in line or (self._session is not None and ("finished after" in line or "key" in line
                                                                  or "best config selected" in line)):
            self._triton(number, line)
        elif "num_warps: " in line and "best" in line:
            self._best(number, line, None)
        if "AUTOTUNE" in line or " ms " in line:
            self._inductor(number, line)

    def _triton(self, number: int, line: str) -> None:
        bench = _BENCH.search(line)
        if bench:
            self._last_bench = {"config": parse_config(bench.group(2)), "line": number}
            self._benchmarked.setdefault(bench.group(1), []).append(self._last_bench)
            return
        failed = _FAILED.search(line)
        if failed:
            if self._last_bench is not None:  # the autotuner prints it right after that config's line
                self._last_bench.update(status="failed", error=failed.group(1), error_line=number)
                if failed.group(1).endswith(":"):  # `at 5:4:`: the source excerpt and message follow
                    self._failing = {"choice": self._last_bench, "first": failed.group(1), "lines": 0}
                self._last_bench = None
            return
        head = _TRITON_HEAD.search(line)
        if head:
            kernel, rest = head.group(1), head.group(2)
            self._session = {"kind": "triton", "kernel": kernel, "key": None, "seconds": None, "line": number,
                             "choices": [{"name": f"config {i + 1}", "time_ms": None, **bench}
                                         for i, bench in enumerate(self._benchmarked.pop(kernel, []))]}
            self._last_bench = None
            self.entries.append(self._session)
            self._continue(number, rest)
            return
        if self._session is not None:
            self._continue(number, line)

    def _continue(self, number: int, text: str) -> None:
        session = self._session
        assert session is not None
        finished = _FINISHED.search(text)
        if finished:
            session["seconds"] = float(finished.group(1))
        key = _KEY.search(text)
        if key and session["key"] is None:
            session["key"] = key.group(1).strip()
        if "best config selected" in text:
            self._best(number, text, session)
            self._session = None

    def _best(self, number: int, line: str, session: dict | None) -> None:
        match = _BEST.search(line)
        if match is None:
            return
        if session is None:  # the program printed a best config itself
            session = {"kind": "triton", "kernel": None, "key": None, "seconds": None, "line": number,
                       "choices": [], "printed_by": "program"}
            self.entries.append(session)
        session["best_config"] = parse_config(match.group(1))

    def _inductor(self, number: int, line: str) -> None:
        table = _TABLE.search(line)
        if table:
            self._table = {"kind": "inductor", "op": table.group(1), "shapes": table.group(2), "line": number,
                           "choices": [], "seconds": None}
            self.entries.append(self._table)
        takes = _TAKES.search(line)
        if takes and self._table is not None:
            self._table["seconds"] = float(takes.group(1))
            self._table = None
            return
        if " ms " not in line and " s " not in line:
            return
        for match in _CHOICE.finditer(line):
            name, time, unit, percent, description = match.groups()
            if self._table is None:  # a choice line whose header was lost (cut or interleaved)
                self._table = {"kind": "inductor", "op": None, "shapes": None, "line": number, "choices": [],
                               "seconds": None}
                self.entries.append(self._table)
            time_ms = float(time) * (1000 if unit == "s" else 1) if time not in ("inf", "nan") else None
            choice = {"name": name, "time_ms": time_ms, "percent": float(percent) if percent else None,
                      "config": parse_config(description) if description else {}, "line": number}
            if time == "inf":  # inductor's time for a choice that failed to compile or run
                choice["status"] = "failed"
            self._table["choices"].append(choice)
            if line[match.end():].strip():  # other output follows: the description may be cut short
                choice["damaged"] = "other output follows on its line: its description may be cut"
                fragment = line[match.start(5):].split("  ", 1)[0]  # dump lines come indented
                self._cut = (choice, fragment if _FRAGMENT.match(fragment) else None, number)
