"""Every URL the app links to is built here, so the base_url setting applies everywhere."""

from __future__ import annotations

from urllib.parse import quote

# Every id and number column is an Integer: 32 bits on PostgreSQL, whose driver then fails on a
# wider value, as SQLite's does past 64 bits (OverflowError). A number beyond it names no row.
MAX_URL_INT = 2**31 - 1


def parse_int(text: str) -> int | None:
    """A non-negative decimal number from a URL, or None: ASCII digits only (``str.isdigit``
    also takes ``²`` and Arabic-Indic digits), no sign, at most MAX_URL_INT."""
    if not text.isascii() or not text.isdigit() or len(text) > 10:
        return None
    value = int(text)
    return value if value <= MAX_URL_INT else None


def snapshot_id(run_id: str, ordinal: int, index: int) -> str:
    """Public snapshot id: unguessable because it starts with the run's id."""
    return f"{run_id}-{ordinal}-{index}"


def parse_snapshot_id(value: str) -> tuple[str, int, int] | None:
    parts = value.split("-")
    if len(parts) != 3:
        return None
    ordinal, index = parse_int(parts[1]), parse_int(parts[2])
    if ordinal is None or index is None:
        return None
    return parts[0], ordinal, index


def compilation_id(run_id: str, ordinal: int) -> str:
    """Public compilation id, the prefix of its snapshots' ids: `{run}-{ordinal}`."""
    return f"{run_id}-{ordinal}"


def parse_compilation_id(value: str) -> tuple[str, int] | None:
    parts = value.split("-")
    ordinal = parse_int(parts[1]) if len(parts) == 2 and parts[0] else None
    return None if ordinal is None else (parts[0], ordinal)


class Urls:
    def __init__(self, base_url: str = "") -> None:
        base = base_url.strip().rstrip("/")
        self.base = base if not base or base.startswith("/") else "/" + base  # "irlens" means "/irlens"

    def path(self, path: str) -> str:
        return f"{self.base}{path}"

    def home(self) -> str:
        return self.path("/")

    def static(self, name: str) -> str:
        return self.path(f"/static/{name}")

    def runs(self) -> str:
        return self.path("/runs")

    def run(self, run_id: str) -> str:
        return self.path(f"/runs/{run_id}")

    def run_page(self, run_id: str, page: int, anchor: str = "compilations") -> str:
        """One page of a long run's compilation list (the JSON holds them all)."""
        return self.path(f"/runs/{run_id}") + (f"?page={page}" if page > 1 else "") + f"#{anchor}"

    def run_log(self, run_id: str, input_pk: int) -> str:
        """The stored non-IR text of one uploaded log file, as text/plain."""
        return self.path(f"/runs/{run_id}/log/{input_pk}")

    def compilation(self, run_id: str, ordinal: int) -> str:
        return self.path(f"/runs/{run_id}/c/{ordinal}")

    def snapshot(self, run_id: str, ordinal: int, index: int) -> str:
        return self.path(f"/runs/{run_id}/c/{ordinal}/s/{index}")

    def snapshot_raw(self, run_id: str, ordinal: int, index: int) -> str:
        return self.snapshot(run_id, ordinal, index) + "/raw"

    def snapshot_reproducer(self, run_id: str, ordinal: int, index: int, kind: str = "mlir") -> str:
        """The pass's reproducer: `mlir` (for triton-opt --run-reproducer) or `py` (a script for the wheel)."""
        return self.snapshot(run_id, ordinal, index) + f"/reproducer.{kind}"

    def snapshot_replay(self, run_id: str, ordinal: int, index: int) -> str:
        """The "Re-run this pass" panel of the pass whose dump is this snapshot (and its .json twin)."""
        return self.snapshot(run_id, ordinal, index) + "/replay"

    def snapshot_lines(self, run_id: str, ordinal: int, index: int, start: int, count: int) -> str:
        """An HTML fragment: lines ``start + 1`` .. ``start + count`` of a snapshot, marked up."""
        return self.snapshot(run_id, ordinal, index) + f"/lines?start={start}&count={count}"

    def artifact_lines(self, run_id: str, ordinal: int, artifact_pk: int, start: int, count: int) -> str:
        return self.artifact_view(run_id, ordinal, artifact_pk) + f"/lines?start={start}&count={count}"

    def artifact(self, run_id: str, ordinal: int, artifact_pk: int) -> str:
        return self.path(f"/runs/{run_id}/c/{ordinal}/files/{artifact_pk}")

    def artifact_view(self, run_id: str, ordinal: int, artifact_pk: int) -> str:
        """A cache file highlighted like a snapshot (the bare artifact URL stays the raw file)."""
        return self.artifact(run_id, ordinal, artifact_pk) + "/view"

    def source_map(self, run_id: str, ordinal: int, file: str | None = None, line: int | None = None) -> str:
        """Which IR lines of every pass of a compilation map to Python ``file:line``."""
        url = self.compilation(run_id, ordinal) + "/map"
        if file is not None:
            url += f"?file={quote(file, safe='/')}" + (f"&line={line}" if line is not None else "")
        return url

    def op_history(self, run_id: str, ordinal: int, index: int | None = None, line: int | None = None,
                   value: str | None = None, file: str | None = None, py_line: int | None = None) -> str:
        """One op followed through every pass: from snapshot `index`'s IR `line` or SSA `value`, or
        from a Python `file` and `py_line`."""
        params = [(key, str(val)) for key, val in (("s", index), ("line", line), ("value", value),
                                                    ("file", file), ("py", py_line)) if val is not None]
        query = "&".join(f"{key}={quote(val, safe='/')}" for key, val in params)
        return self.compilation(run_id, ordinal) + "/history" + (f"?{query}" if query else "")

    def source(self, run_id: str, path: str) -> str:
        return self.path(f"/runs/{run_id}/src/{quote(path)}")

    def diff(self, left: str, right: str) -> str:
        return self.path(f"/diff/{left}..{right}")

    def compare(self, left: str, right: str) -> str:
        """Two compilations pass by pass; `left` and `right` are compilation ids (`RUN-ORDINAL`)."""
        return self.path(f"/compare/{left}..{right}")

    def compare_row(self, left: str, right: str, row: int) -> str:
        """One aligned row of a comparison: its diff's size, and whether it is the same ignoring noise."""
        return self.compare(left, right) + f"/rows/{row}"

    def compare_pick(self) -> str:
        """A form's target: `?a=RUN-ORDINAL&b=RUN-ORDINAL` redirects to the comparison."""
        return self.path("/compare")

    def layout(self, attr: str | None = None, shape: list[int] | str | None = None, **extra: str) -> str:
        """The layout inspector (app/web/views/layout.py) for an encoding (aliases expanded) at a shape."""
        if isinstance(shape, list):
            shape = "x".join(map(str, shape))
        params = [("attr", attr), ("shape", shape), *extra.items()]
        query = "&".join(f"{k}={quote(str(v), safe='')}" for k, v in params if v not in (None, ""))
        return self.path("/-/layout") + (f"?{query}" if query else "")

    # -- kernel history across runs (app/web/views/kernels.py) --
    def kernels(self, query: str | None = None) -> str:
        return self.path("/kernels") + (f"?q={quote(query, safe='')}" if query else "")

    def kernel(self, name: str, order: str | None = None) -> str:
        """One kernel's history: `order` is None (run order) or `label:KEY` (that label's value, as versions)."""
        return self.path(f"/kernels/{quote(name, safe='')}") + (f"?order={quote(order, safe=':')}" if order else "")

    def run_check(self, run_id: str, query: str = "") -> str:
        """`irlens check`'s answer for a stored run: its kernels against a baseline (app/insight/kernel_check.py)."""
        return self.run(run_id) + "/check" + (f"?{query}" if query else "")

    # -- teams: sign-in, search, managing a run (app/web/views/auth.py, app/web/views/manage.py) --
    def signin(self, next_url: str | None = None) -> str:
        return self.path("/-/signin") + (f"?next={quote(next_url, safe='/')}" if next_url else "")

    def signout(self) -> str:
        return self.path("/-/signout")

    def whoami(self) -> str:
        return self.path("/-/whoami.json")

    def search(self, query: str | None = None) -> str:
        return self.path("/search") + (f"?q={quote(query, safe='')}" if query else "")

    def search_suggest(self, word: str | None = None) -> str:
        """Completions of the word being typed in the search box: an HTML list of options (and .json)."""
        return self.path("/search/suggest") + (f"?q={quote(word, safe='')}" if word else "")

    def run_edit(self, run_id: str) -> str:
        return self.run(run_id) + "/edit"

    def run_delete(self, run_id: str) -> str:
        return self.run(run_id) + "/delete"

    def route(self, path: str) -> str:
        """A request path without the base URL, whether or not the proxy already stripped it."""
        if self.base and (path == self.base or path.startswith(self.base + "/")):
            return path[len(self.base):] or "/"
        return path or "/"

    def json(self, url: str) -> str:
        """The .json twin of a page URL."""
        path, _, query = url.partition("?")
        path = path.rstrip("/") or self.base
        twin = (path + "/index.json") if path in ("", self.base) else path + ".json"
        return twin + (f"?{query}" if query else "")
