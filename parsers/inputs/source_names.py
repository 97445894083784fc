"""What a stream holds and what its members are called: the archive or compression format by magic
bytes, and member names made safe to keep (no traversal, no absolute paths, no control characters).

Pure helpers for the walker (parsers/inputs/sources.py) and its archive readers (parsers/inputs/archives.py).
"""

from __future__ import annotations

import os
import re
import tarfile

SUFFIXES = {"gz": (".gz", ".gzip"), "xz": (".xz", ".lzma"), "bz2": (".bz2",), "zst": (".zst", ".zstd")}


_BZIP2_MAGIC = re.compile(rb"BZh[1-9](1AY&SY|\x17rE8P\x90)")  # a first block, or an empty stream


def kind_of(head: bytes) -> str | None:
    """Archive or compression format from the first bytes; None for anything else."""
    if head.startswith(b"\x1f\x8b\x08"):
        return "gz"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "zst"
    if _BZIP2_MAGIC.match(head):
        return "bz2"
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if _is_tar_header(head):
        return "tar"
    return None


def _is_tar_header(head: bytes) -> bool:
    if len(head) < tarfile.BLOCKSIZE:
        return False
    if head[257:262] == b"ustar":  # POSIX and GNU
        return True
    # Pre-POSIX (v7) tar has no magic; accept a header whose checksum adds up.
    try:
        stored = int(head[148:156].replace(b"\0", b" ").strip() or b"-1", 8)
    except ValueError:
        return False
    return head[0] != 0 and stored == sum(head[:148]) + 8 * 0x20 + sum(head[156:512])


def member_name(name: str) -> tuple[str, str | None]:
    """A member's clean relative path, and why it must be skipped (None if it is fine)."""
    name = name.replace("\\", "/")  # zips made on Windows; also defeats "..\\" traversal
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        return name.lstrip("/"), "absolute path"
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        return name, "path traversal (../..)"
    if not parts:
        return name, "empty member name"
    return "/".join(parts), None


def is_junk(name: str, is_folder: bool) -> bool:
    """macOS metadata: __MACOSX folders, .DS_Store, and AppleDouble "._name" files."""
    parts = name.split("/")
    if "__MACOSX" in parts:
        return True
    return not is_folder and (parts[-1] == ".DS_Store" or parts[-1].startswith("._"))


def strip_suffix(path: str, kind: str) -> str:
    for suffix in SUFFIXES[kind]:
        if path.lower().endswith(suffix) and len(path) > len(suffix) and path[-len(suffix) - 1] != "/":
            return path[: -len(suffix)]
    return path


def base_name(name: str) -> str:
    return name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def folder_display(root: str, display: str, folder: str) -> str:
    relative = os.path.relpath(folder, root)
    return display if relative == "." else f"{display}/{relative.replace(os.sep, '/')}"


_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")


def display_path(path: str) -> str:
    """A path fit to show and store: undecodable bytes and control characters replaced."""
    text = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return _CONTROL_CHARACTERS.sub("?", text)


def describe(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return f"truncated ({text})" if isinstance(err, EOFError) else text


def fmt_bytes(count: int) -> str:
    for unit, shift in (("GB", 30), ("MB", 20), ("KB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.1f} {unit}"
    return f"{count} bytes"
