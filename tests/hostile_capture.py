"""A real capture with hostile strings planted wherever user data reaches a page.

Built from the real sm90 add_kernel log and its Python source (tests/fixtures): every payload calls
or names ``PWN``, so a page (or a browser) that lets one through is easy to catch. Payloads go in
the kernel name, a string attribute, the loc() file path, warnings in the log text, the Python
source, archive member paths, a cache file's metadata, the run's title and tags.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from html.parser import HTMLParser
from pathlib import Path

from tests.conftest import FIXTURES

SCRIPT = "<script>PWN()</script>"
IMG = "<img src=x onerror=PWN()>"
ATTRIBUTE = '"onmouseover="PWN()" x="'
JS_URL = "javascript:PWN()"
TEXTAREA = "</textarea><svg onload=PWN()>"
ALL = (SCRIPT, IMG, ATTRIBUTE, JS_URL, TEXTAREA)

KERNEL = "add_kernel" + IMG.replace(" ", "_")  # the dump banner's name ends at a space or "("
TITLE = f"{SCRIPT} {IMG} {ATTRIBUTE}"
TAGS = [SCRIPT, JS_URL]
SOURCE_DIR = f"k{SCRIPT}"  # a folder name in the loc() path and in the archive
LOG_NAME = f"dump{ATTRIBUTE}{IMG}.log"
WARNINGS = (
    f"/home/dev/kernels/kernels.py:3: UserWarning: {SCRIPT} {TEXTAREA}\n"
    f"  warnings.warn('{ATTRIBUTE} {JS_URL}')\n"
    f"RuntimeWarning: {IMG}\n"
)


def _mlir_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def hostile_log() -> bytes:
    log = gzip.decompress((FIXTURES / "sm90_add_kernel_dump.log.gz").read_bytes()).decode("utf-8")
    log = log.replace("@add_kernel", "@" + KERNEL)
    log = log.replace(
        "/home/dev/kernels/kernels.py", f"/home/dev/{_mlir_string(SOURCE_DIR)}/kernels.py"
    )
    log = log.replace(
        "attributes {noinline = false}",
        f'attributes {{noinline = false, irlens.note = "{_mlir_string(ATTRIBUTE + JS_URL + TEXTAREA)}"}}',
    )
    return (WARNINGS + log + WARNINGS).encode("utf-8")


def hostile_source() -> bytes:
    source = (FIXTURES / "triton39_src" / "kernels.py").read_text()
    return (source + "".join(f"# {payload}\n" for payload in ALL)).encode("utf-8")


def hostile_cache_json() -> bytes:
    """Kernel metadata as Triton's cache writes it, with a hostile name and string fields."""
    return json.dumps(
        {"name": KERNEL + SCRIPT, "target": {"backend": "cuda", "arch": 90, "warp_size": 32},
         "num_warps": 4, "hash": "0" * 64, "triton_version": f"3.9{IMG}"}
    ).encode()


def hostile_capture(folder: Path) -> Path:
    """A .tar.gz of the hostile log, its Python source and a cache folder, in ``folder``."""
    members = {
        LOG_NAME: hostile_log(),
        f"{SOURCE_DIR}/kernels.py": hostile_source(),
        f"cache/{'a' * 32}{IMG}/{KERNEL}.json": hostile_cache_json(),
        f"cache/{'a' * 32}{IMG}/{KERNEL}.ttir": b"module {\n  tt.func public @" + KERNEL.encode() + b"() {\n"
        b"    tt.return\n  }\n}\n",
    }
    path = folder / "hostile.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


class _Audit(HTMLParser):
    """Collects every way a page could run or load something a payload put there."""

    OURS = ("script", "svg", "path", "circle", "rect", "line", "polyline", "g")

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self._script_type: str | None = None  # inside a <script>: its type

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name for name, _ in attrs}
        values = dict(attrs)
        if any(name.startswith("on") for name in names):
            self.problems.append(f"<{tag}> with an event handler: {attrs}")
        if tag in ("img", "iframe", "object", "embed", "base", "textarea", "frame"):
            self.problems.append(f"unexpected <{tag}>: {attrs}")
        for name in ("href", "src", "action", "formaction", "xlink:href"):
            value = (values.get(name) or "").strip().lower()
            if value.startswith(("javascript:", "data:text/html", "vbscript:")):
                self.problems.append(f"<{tag} {name}={value!r}>")
        if tag == "script":
            if "src" not in names and values.get("type") != "application/json":
                self.problems.append(f"inline <script>: {attrs}")
            self._script_type = values.get("type") or "text/javascript"

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script_type = None

    def handle_data(self, data: str) -> None:
        # A JSON data block may hold payloads as data (with "<" escaped); a script may not.
        if self._script_type not in (None, "application/json") and "PWN" in data:
            self.problems.append(f"payload inside a script element: {data[:80]!r}")


def audit_html(page: str) -> list[str]:
    """What in ``page`` could execute or load a planted payload (empty when the page is inert)."""
    audit = _Audit()
    audit.feed(page)
    audit.close()
    return audit.problems
