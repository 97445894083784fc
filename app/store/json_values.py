"""JSON as the database stores it: always valid JSON (`allow_nan=False`). The parsers leave out
NaN and infinities with a warning naming the file (parsers/json_numbers.py); a value that still
reaches a column (a sum that overflowed, a future reader's slip) is stored as null rather than as
`NaN`, which PostgreSQL refuses and which no JSON answer may carry."""

from __future__ import annotations

import json
import logging
import math
from typing import Any

log = logging.getLogger(__name__)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:
        log.warning("a non-finite number reached a JSON column: stored as null")
        return json.dumps(_finite(value), allow_nan=False, **options)
