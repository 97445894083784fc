"""`diff_texts`: the pipeline of the package docstring, from two texts to a DiffResult."""

from __future__ import annotations

from app.diff.align import _ALIGN_EFFORT, _intern, _opcodes, match_blocks
from app.diff.keys import _prepare, split_lines
from app.diff.pairing import _segments
from app.diff.print_forms import like_for_like, mixed_forms, note
from app.diff.renames import _absorb_renamed_islands, _check_renames
from app.diff.result import DiffOptions, DiffResult

_DEFAULT_OPTIONS = DiffOptions()


def diff_texts(a_text: str, b_text: str, options: DiffOptions = _DEFAULT_OPTIONS, names: bool = False) -> DiffResult:
    """Diff two IR texts line by line, comparing normalised lines and keeping the originals.
    `names`: compare as two print forms are compared (value names out of the key, rebound at each
    definition), also when both sides print alike: a replayed pass (app/replay) may print `%arg6`
    where the dump, which kept a NameLoc the parsed text lost, prints `%row_idx`."""
    a_lines, b_lines = split_lines(a_text), split_lines(b_text)
    a_compared, a_key_text, a_ignored = _prepare(a_lines, options, a_text)
    b_compared, b_key_text, b_ignored = _prepare(b_lines, options, b_text)
    forms = mixed_forms(a_text, b_text)
    scoped = forms is not None or names
    if scoped:  # a module dump against a pipeliner-internal one: compare like with like
        a_key_text = like_for_like(a_compared, a_ignored, a_text)
        b_key_text = like_for_like(b_compared, b_ignored, b_text)
    a_keys, b_keys = _intern(a_key_text, b_key_text)
    opcodes = list(_opcodes(match_blocks(a_keys, b_keys, _ALIGN_EFFORT), len(a_keys), len(b_keys)))
    renames: dict[str, str] = {}
    renumbered = options.ssa or options.alias or scoped
    if renumbered:
        check = options if not scoped else DiffOptions(options.loc, True, options.alias)
        opcodes = _check_renames(opcodes, a_compared, b_compared, check, renames, scoped=scoped)
        # lines equal as keys but renamed inconsistently must not pair as equal again
        a_keys, b_keys = _intern(a_compared, b_compared)
    # with both numberings ignored, replaced blocks hold no lines equal up to numbering
    segments = _segments(
        opcodes, a_keys, b_keys, a_compared, b_compared, a_ignored, b_ignored, options.ssa and options.alias
    )
    if renumbered:
        segments = _absorb_renamed_islands(segments, a_compared, b_compared)
    notes = [] if forms is None else [note(forms)]
    return DiffResult(a_lines, b_lines, options, segments, renames=renames, notes=notes)
