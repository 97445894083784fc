"""Run labels: `triton=3.7.1`, `commit=abc123`, `branch=main`: what a run was made with, as a dict
on the run (`runs.labels`). Kernel history orders runs by them (`?order=label:triton`), search
finds them (`label:triton=3.7.1`) and `irlens check` picks its baseline by them.

A key is a short word (letters, digits, `_ . -`); a value is any short text. Ingest fills in
`triton` where every compilation of the run that names a Triton version names the same one."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MAX_LABELS = 20
MAX_KEY = 40
MAX_VALUE = 200
KEY = re.compile(r"[A-Za-z0-9_.\-]{1,40}")


class LabelError(ValueError):
    """A label that is not KEY=VALUE, or too many."""


def parse_label(text: str) -> tuple[str, str]:
    key, sep, value = str(text).partition("=")
    key, value = key.strip(), " ".join(value.split())
    if not sep or not KEY.fullmatch(key):
        raise LabelError(f"not a label: {str(text)[:80]!r} (expected KEY=VALUE, KEY of letters, digits, _ . -)")
    if len(value) > MAX_VALUE:
        raise LabelError(f"label {key}: the value is longer than {MAX_VALUE} characters")
    return key, value


def parse_labels(values: Iterable[str] | str | dict | None) -> dict[str, str]:
    """Labels from `--label K=V` options, form fields ("k=v, k2=v2" or several fields) or a JSON
    dict. A later value of a key wins; an empty value removes the key."""
    if values is None:
        return {}
    if isinstance(values, dict):
        pairs = []
        for key, value in values.items():
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise LabelError(f"label {str(key)[:40]}: the value must be text")
            pairs.append(parse_label(f"{key}={value}"))
    else:
        if isinstance(values, str):
            values = [values]
        pairs = [parse_label(part) for value in values for part in str(value).split(",") if part.strip()]
    labels: dict[str, str] = {}
    for key, value in pairs:
        labels.pop(key, None)
        if value:
            labels[key] = value
    if len(labels) > MAX_LABELS:
        raise LabelError(f"at most {MAX_LABELS} labels per run")
    return labels


def labels_text(labels: dict[str, Any] | None) -> str:
    """The form field's text: "triton=3.7.1, commit=abc123"."""
    return ", ".join(f"{key}={value}" for key, value in (labels or {}).items())


def with_triton(labels: dict[str, str], versions: Iterable[str | None]) -> dict[str, str]:
    """`labels` plus `triton`, when not given and the compilations that name a version agree on it."""
    named = {version for version in versions if version}
    if "triton" in labels or len(named) != 1:
        return labels
    return {**labels, "triton": named.pop()}


def version_key(value: str | None) -> tuple:
    """A sort key that orders versions as versions: 3.10.0 after 3.9.1, 3.7.1 after 3.7.1rc1,
    plain words after numbers, a missing value last."""
    if value is None or value == "":
        return (2,)
    parts: list[tuple] = []
    for piece in re.findall(r"\d+|[A-Za-z]+", value):
        parts.append((0, int(piece), "") if piece.isdigit() else (-1 if piece.lower() in ("a", "b", "rc", "dev", "alpha", "beta") else 1, 0, piece.lower()))
    # A release sorts after its pre-releases: pad with a marker that beats (-1, ...).
    return (0 if parts and parts[0][0] == 0 else 1, tuple(parts) + ((0, -1, ""),), value)
