"""HTTP caching of rendered pages: ETags from the blob hash and a digest of the renderer's code and
templates, and the If-None-Match check."""

from __future__ import annotations

import hashlib
from pathlib import Path

# Bump when the markup changes: it is part of every ETag (the code's digest is too, in _BUILD).
RENDER_VERSION = "6"

_TEMPLATE_FILES = (
    "snapshot.html",
    "compilation.html",
    "_snap_layouts.html",
    "_snap_source.html",
    "_snap_help.html",
)


def _build_digest() -> str:
    """A digest of the renderer's modules (every .py of app/render/, so any markup change counts) and
    the snapshot templates: a deploy that changes them changes every ETag."""
    digest = hashlib.sha256(RENDER_VERSION.encode())
    package = Path(__file__).resolve().parent
    root = package.parents[1]
    modules = sorted(package.glob("*.py"))
    for path in [*modules, *(root / "templates" / name for name in _TEMPLATE_FILES)]:
        try:
            digest.update(path.read_bytes())
        except OSError:
            continue
    return digest.hexdigest()[:10]


_BUILD = _build_digest()


def etag(digest: str, variant: str = "") -> str:
    """The ETag of a page rendered from blob ``digest``: blob hash + render version (+ variant)."""
    tag = f"{digest}.{RENDER_VERSION}.{_BUILD}"
    if variant:
        tag += "." + hashlib.sha256(variant.encode()).hexdigest()[:10]
    return f'"{tag}"'


def cache_headers(tag: str) -> dict[str, str]:
    return {"ETag": tag, "Cache-Control": "private, max-age=0, must-revalidate"}


def not_modified(if_none_match: str | None, tag: str) -> bool:
    if not if_none_match:
        return False
    candidates = [candidate.strip() for candidate in if_none_match.split(",")]
    return "*" in candidates or tag in candidates or f"W/{tag}" in candidates
