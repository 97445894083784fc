"""Line diffs of IR snapshots. Pure: functions of two texts and the options; no database, no web.
The package may import `parsers/`, `app.layouts` and `app.highlight` only.

The pipeline:

1. **Keys.** Each line gets a comparison key: by default its `loc(...)` parts are stripped and
   `#locN = loc(...)` alias lines (and the `#di_*` debug-info aliases they use) all share one key,
   so location churn neither splits nor pairs real lines. With `ssa` (`alias`) on, value names
   (alias names) lose their numbering in the key: `%acc_13` and `%acc_14` both become `%acc`.
2. **Alignment** of the key sequences with a histogram diff (git's algorithm): trim the common
   ends, split at the longest run around the rarest line the two sides share, recurse. It is
   linear-ish on real IR, where difflib's matcher goes quadratic on repetitive lines.
3. **Renumbering check.** Lines that align only because their numbering was ignored must rename
   consistently: a value (alias) of A maps to one name of B for the whole function (module).
   A line that breaks the mapping is a change. So a pure renumbering disappears while a changed
   operand (`%5` where the mapping says `%4`) still shows.
   When the two sides print differently (a module dump against the pipeliner's internal dumps:
   layouts inline, no loc, numbered values) the keys expand layout aliases and drop value names,
   and the check rebinds names at definitions (`print_forms`); the result's `notes` say so.
4. **Pairing.** Inside each changed block, deleted and inserted lines are paired by operation
   name (a second, coarser alignment), so a replaced `tt.load` sits next to its new version and
   gets an intra-line diff; the rest are plain deletions and insertions.

The modules, in pipeline order: `keys` (1), `align` (2), `renames` (3), `pairing` (4), `pipeline`
(`diff_texts`, which runs them), `print_forms`; `result` (options, segments, rows, hunks, `apply_hunks`), `inline`
(intra-line changes of a paired row), `cache` (results by blob pair). This module only re-exports
what callers use.

The result lists *segments* (runs of rows with one op) over a row space; hunks, change blocks and
stats are computed from them. Rows always point at the original lines: what is compared is
normalised, what is shown is not.
"""

from app.diff.align import match_blocks
from app.diff.cache import DiffCache
from app.diff.inline import inline_changes
from app.diff.keys import is_loc_line, loc_spans, split_lines
from app.diff.pipeline import diff_texts
from app.diff.print_forms import print_form_notes
from app.diff.result import (
    DEFAULT_CONTEXT,
    DELETE,
    EQUAL,
    INSERT,
    MAX_CONTEXT,
    REPLACE,
    DiffOptions,
    DiffResult,
    Hunk,
    Row,
    Segment,
    apply_hunks,
)

__all__ = [
    "DEFAULT_CONTEXT",
    "DELETE",
    "EQUAL",
    "INSERT",
    "MAX_CONTEXT",
    "REPLACE",
    "DiffCache",
    "DiffOptions",
    "DiffResult",
    "Hunk",
    "Row",
    "Segment",
    "apply_hunks",
    "diff_texts",
    "inline_changes",
    "is_loc_line",
    "loc_spans",
    "match_blocks",
    "print_form_notes",
    "split_lines",
]
