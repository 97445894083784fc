"""app.diff on real Triton dumps: the 78 dumps of tests/fixtures/sm90_add_kernel_dump.log.gz.

Texts that must differ in one known way (renumbered values, renumbered aliases, moved locations)
are made from a real dump by a consistent rewrite, so the expected result is exact.
"""

from __future__ import annotations

import gzip
import itertools
import random
import re
from functools import cache

import pytest

from app.diff import (
    DiffOptions,
    Hunk,
    apply_hunks,
    diff_texts,
    inline_changes,
    is_loc_line,
    loc_spans,
    match_blocks,
    split_lines,
)
from app.diff.keys import _LOC_LINE_KEY, _prepare, _strip_locs
from app.diff.pairing import _op_names, _runs
from app.web.views.diff_rows import _mark_html
from app.web.views.diffs import hunks_json
from parsers.logs.log import scan_log
from parsers.records import Dump
from tests.conftest import FIXTURES

TTGIR = 12  # "Before TritonGPURemoveLayoutConversions": #blocked and #blocked1, named values
LLVM = 72  # "Before ConvertNVGPUToLLVM": the LLVM dialect, %0..%N and %arg values


@cache
def dumps() -> tuple[Dump, ...]:
    with gzip.open(FIXTURES / "sm90_add_kernel_dump.log.gz", "rb") as stream:
        return tuple(record for record in scan_log(stream) if isinstance(record, Dump))


def body(index: int) -> str:
    return dumps()[index].body.decode()


def renumber_values(text: str) -> str:
    """Every SSA value renumbered the way a printer would after one more value: %5 -> %6,
    %offsets_3 -> %offsets_4, %offsets -> %offsets_0, %arg2 -> %arg3. One to one, so consistent."""

    def rename(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.isdigit():
            return f"%{int(name) + 1}"
        if re.fullmatch(r"arg\d+", name):
            return f"%arg{int(name[3:]) + 1}"
        numbered = re.fullmatch(r"(.*)_(\d+)", name)
        if numbered and not re.fullmatch(r"c\d+_i\d+", name):
            return f"%{numbered.group(1)}_{int(numbered.group(2)) + 1}"
        return f"%{name}_0"

    # value names only: never inside strings (loc("x_ptr") names)
    return re.sub(r'"[^"]*"|%([\w$.-]+)', lambda m: m.group() if m.group(1) is None else rename(m), text)


def swap_aliases(text: str, first: str, second: str) -> str:
    """Swap two alias names everywhere (definitions and uses), as a printer renumbering them would."""
    pattern = re.compile(rf"#(?:{re.escape(first[1:])}|{re.escape(second[1:])})(?![\w.])")
    return pattern.sub(lambda m: second if m.group() == first else first, text)


def move_locations(text: str) -> str:
    """Shift every #locN by one (definitions and references) and move a Python line number."""
    text = re.sub(r"#loc(\d*)(?![\w.])", lambda m: f"#loc{int(m.group(1) or 0) + 100}", text)
    return text.replace('kernels.py":16:15)', 'kernels.py":17:15)')


def changed_rows(result) -> list:
    return [row for row in result.iter_rows() if row.op != "equal" and not row.ignored]


# --------------------------------------------------------------------------- the basics


def test_the_fixture_holds_78_dumps():
    assert len(dumps()) == 78


def test_identical_snapshots_have_no_hunks():
    for index in (0, TTGIR, LLVM):
        result = diff_texts(body(index), body(index))
        assert result.identical
        assert result.hunks() == []
        assert result.stats == {"added": 0, "removed": 0, "changed_lines": 0, "changes": 0}


def test_empty_texts():
    assert diff_texts("", "").identical
    result = diff_texts("", body(0), DiffOptions(loc=True))
    assert result.stats["added"] == len(split_lines(body(0)))
    locations = sum(1 for line in split_lines(body(0)) if line.startswith("#loc"))
    assert diff_texts("", body(0)).stats["added"] == len(split_lines(body(0))) - locations
    assert apply_hunks([], hunks_json(result, 5)) == split_lines(body(0))


def test_a_real_pass_shows_its_changes():
    # RemoveLayoutConversions drops the #blocked1 round trips of the loads and the store
    result = diff_texts(body(TTGIR), body(TTGIR + 1))
    removed = [result.a_lines[row.a_no - 1] for row in result.iter_rows() if row.op == "delete"]
    assert any("ttg.convert_layout %x_5" in line for line in removed)
    assert result.stats["changes"] >= 1


# --------------------------------------------------------------------------- what is ignored


def test_locations_are_ignored_by_default_and_compared_with_loc():
    a = body(TTGIR)
    b = move_locations(a)
    assert a != b
    default = diff_texts(a, b)
    assert default.identical
    assert any(row.ignored for row in default.iter_rows())  # shown as equal, flagged as differing
    compared = diff_texts(a, b, DiffOptions(loc=True))
    assert not compared.identical
    # every line with a location changed, and the moved Python line
    assert compared.stats["changed_lines"] + compared.stats["added"] >= len(split_lines(a)) // 2


def _line_by_line(lines: list[str]) -> tuple[list[str], list[bool]]:
    """What `_prepare` computes, one line at a time with the public rules: the reference."""
    compared, ignored = [], []
    for line in lines:
        ignored.append(is_loc_line(line))
        compared.append(_LOC_LINE_KEY if ignored[-1] else _strip_locs(line).rstrip())
    return compared, ignored


def _loc_variants(text: str) -> str:
    """A real dump rewritten into the shapes the whole-text pass must leave to the line rules:
    CRLF endings, an alias of an alias (`#loc3 = loc(#loc1)`, whose tail looks like a trailing
    location), a second location before the trailing one, trailing blanks after a location."""
    text = re.sub(r"^(#loc\d+) = loc\(.*\)$", r"\1 = loc(#loc1)", text, count=3, flags=re.MULTILINE)
    text = re.sub(r"^([^#].*\S) (loc\(#loc\d*\))$", r"\1 loc(unknown) \2", text, count=3, flags=re.MULTILINE)
    text = re.sub(r"^([^#].* loc\(#loc\d*\))$", "\\1  \t", text, count=3, flags=re.MULTILINE)
    return text.replace("\n", "\r\n", 20)


def test_prepare_over_the_whole_text_matches_the_line_by_line_rules():
    texts = [body(index) for index in range(len(dumps()))]
    variants = [_loc_variants(body(index)) for index in (0, TTGIR, LLVM)]
    assert all(variant != body(index) for variant, index in zip(variants, (0, TTGIR, LLVM)))
    for text in texts + variants:
        lines = split_lines(text)
        compared, keys, ignored = _prepare(lines, DiffOptions())
        assert (compared, ignored) == _line_by_line(lines)
        assert keys is compared
        # given the text the lines came from (with or without its final newline, CRs or not)
        for source in (text, text + "\n", text.rstrip("\n")):
            assert _prepare(split_lines(source), DiffOptions(), source)[:2] == (compared, keys)
    assert _prepare([], DiffOptions()) == ([], [], [])


def test_location_alias_lines_added_at_the_end_are_no_change():
    a = body(TTGIR)
    b = a + '\n#loc99 = loc("/home/dev/kernels/kernels.py":99:1)\n#loc98 = loc("extra"(#loc99))'
    default = diff_texts(a, b)
    assert default.identical
    rows = list(default.iter_rows())
    assert [row.op for row in rows[-2:]] == ["insert", "insert"]
    assert all(row.ignored for row in rows[-2:])
    assert not diff_texts(a, b, DiffOptions(loc=True)).identical


def test_pure_ssa_renumbering_is_a_change_by_default_and_none_with_ssa():
    for index in (TTGIR, LLVM):
        a = body(index)
        b = renumber_values(a)
        assert a != b
        default = diff_texts(a, b)
        assert not default.identical
        assert default.stats["changed_lines"] > 10
        assert diff_texts(a, b, DiffOptions(ssa=True)).identical, index


def test_ssa_ignores_numbering_but_not_a_changed_operand():
    a = body(TTGIR)
    b = renumber_values(a).replace("arith.addf %x_10, %y_15", "arith.addf %y_15, %x_10")
    assert "arith.addf %y_15, %x_10" in b
    result = diff_texts(a, b, DiffOptions(ssa=True))
    changed = changed_rows(result)
    assert len(changed) == 1
    assert "arith.addf %x_9, %y_14" in result.a_lines[changed[0].a_no - 1]
    assert changed[0].op == "replace"


def test_renumbering_after_an_inserted_operation_still_aligns_the_rest():
    # a new value early in the function renumbers everything after it: with ssa only the new
    # line is a change, not every line below it
    a = body(LLVM)
    lines = split_lines(a)
    first_op = next(i for i, line in enumerate(lines) if re.match(r"\s+%0 = ", line))
    b_lines = lines[:first_op] + ["    %0 = llvm.mlir.constant(7 : i32) : i32 loc(#loc1)"] + lines[first_op:]
    b = renumber_values("\n".join(b_lines))
    b = b.replace("%1 = llvm.mlir.constant(7 : i32)", "%0 = llvm.mlir.constant(7 : i32)")
    result = diff_texts(a, b, DiffOptions(ssa=True))
    assert result.stats == {"added": 1, "removed": 0, "changed_lines": 0, "changes": 1}


def test_alias_renumbering_vanishes_with_alias():
    a = body(TTGIR)
    b = swap_aliases(a, "#blocked", "#blocked1")
    assert a != b and "#blocked1 = #ttg.blocked<{sizePerThread = [1]" in b
    assert not diff_texts(a, b).identical
    assert diff_texts(a, b, DiffOptions(alias=True)).identical


def test_alias_option_keeps_a_changed_layout():
    a = body(TTGIR)
    # the store now uses the other layout: aliases still map one to one, so it is a change
    b = a.replace(
        "tt.store %3, %4, %5 : tensor<1024x!tt.ptr<f32>, #blocked1>",
        "tt.store %3, %4, %5 : tensor<1024x!tt.ptr<f32>, #blocked>",
    )
    result = diff_texts(a, b, DiffOptions(alias=True))
    assert [result.a_lines[row.a_no - 1].strip()[:8] for row in changed_rows(result)] == ["tt.store"]


def test_all_options_together_on_a_renumbered_relocated_text():
    a = body(TTGIR)
    b = move_locations(swap_aliases(renumber_values(a), "#blocked", "#blocked1"))
    assert diff_texts(a, b, DiffOptions(ssa=True, alias=True)).identical
    assert not diff_texts(a, b, DiffOptions(ssa=True)).identical
    assert not diff_texts(a, b, DiffOptions(alias=True)).identical


# --------------------------------------------------------------------------- hunks rebuild B


@pytest.mark.parametrize("context", [0, 3, 5, -1])
def test_hunks_turn_a_into_b_for_every_pass(context):
    texts = [body(index) for index in range(len(dumps()))]
    pairs = [*itertools.pairwise(texts), (texts[0], texts[-1]), (texts[-1], texts[5])]
    for a, b in pairs:
        result = diff_texts(a, b, DiffOptions(loc=True))
        assert apply_hunks(split_lines(a), hunks_json(result, context)) == split_lines(b)


def test_hunks_rebuild_b_up_to_what_is_ignored():
    a, b = body(LLVM - 4), body(LLVM)  # CanonicalizeLLVMIR .. ConvertNVGPUToLLVM: a big rewrite
    for options in (DiffOptions(), DiffOptions(ssa=True), DiffOptions(ssa=True, alias=True)):
        result = diff_texts(a, b, options)
        rebuilt = apply_hunks(split_lines(a), hunks_json(result, 3))
        strip = re.compile(r"\s*loc\((?:[^()]|\([^()]*\))*\)")
        keep = [strip.sub("", line) for line in rebuilt if not line.startswith("#loc")]
        want = [strip.sub("", line) for line in split_lines(b) if not line.startswith("#loc")]
        if not options.ssa:
            assert keep == want
        else:
            assert [re.sub(r"%[\w$.-]+", "%", line) for line in keep] == [
                re.sub(r"%[\w$.-]+", "%", line) for line in want
            ]


def test_hunk_headers_count_their_lines():
    result = diff_texts(body(TTGIR), body(TTGIR + 1), DiffOptions(loc=True))
    for hunk in hunks_json(result, 3):
        lines = hunk["lines"]
        assert hunk["a_len"] == sum(1 for line in lines if line["a_no"] is not None)
        assert hunk["b_len"] == sum(1 for line in lines if line["b_no"] is not None)
        first_a = next(line["a_no"] for line in lines if line["a_no"] is not None)
        assert hunk["a_start"] == first_a


def test_context_controls_the_rows_around_each_change():
    result = diff_texts(body(TTGIR), body(TTGIR + 1))
    small, large = result.hunks(1), result.hunks(10)

    def rows(hunks: list[Hunk]) -> int:
        return sum(h.row_end - h.row_start for h in hunks)

    assert rows(small) < rows(large)
    assert result.hunks(-1)[0].row_start == 0 and result.hunks(-1)[-1].row_end == result.rows


def test_replaced_lines_pair_with_their_counterpart():
    # SCCP rewrites constants: paired lines hold the same operation
    def operation(line: str) -> str:
        return re.sub(r"^\s*(%[\w$.:#-]+ = )?", "", line).split(" ")[0]

    result = diff_texts(body(51), body(52))
    pairs = [
        (result.a_lines[row.a_no - 1], result.b_lines[row.b_no - 1])
        for row in result.iter_rows()
        if row.op == "replace"
    ]
    assert pairs
    for a, b in pairs:
        assert operation(a) == operation(b), (a, b)


# --------------------------------------------------------------------------- pieces


def test_match_blocks_finds_real_matches_in_order():
    rng = random.Random(7)
    for _ in range(200):
        a = [rng.randrange(6) for _ in range(rng.randrange(40))]
        b = [rng.randrange(6) for _ in range(rng.randrange(40))]
        blocks = match_blocks(a, b)
        last_i = last_j = 0
        for i, j, size in blocks:
            assert size > 0 and i >= last_i and j >= last_j
            assert a[i : i + size] == b[j : j + size]
            last_i, last_j = i + size, j + size


def test_match_blocks_bounds_its_effort_on_repetitive_input(monkeypatch):
    """Histogram splits on lines that all repeat can land near a region's edge every time, which
    rescans the region each time (quadratic); `effort` caps the lines scanned."""
    import app.diff.align as diff_module

    scanned = []
    best_split = diff_module._best_split

    def counting(a, alo, ahi, b, blo, bhi, where):
        scanned.append(bhi - blo)
        return best_split(a, alo, ahi, b, blo, bhi, where)

    monkeypatch.setattr(diff_module, "_best_split", counting)
    # A unit of 47 lines repeated 60 times; B has 40 units, each with one line of its own: every
    # split finds a unit-long run at the start of what is left (as in LLVM-dialect lowering).
    unit = list(range(47))
    a = unit * 60
    b = [1000 + n if k == n % 47 else key for n in range(40) for k, key in enumerate(unit)]
    unbounded = match_blocks(a, b)
    unbounded_scanned, scanned[:] = sum(scanned), []
    bounded = match_blocks(a, b, effort=4)
    assert sum(scanned) <= 4 * (len(a) + len(b)) < unbounded_scanned
    for blocks in (unbounded, bounded):
        last_i = last_j = 0
        for i, j, size in blocks:
            assert size > 0 and i >= last_i and j >= last_j and a[i : i + size] == b[j : j + size]
            last_i, last_j = i + size, j + size
    assert sum(size for *_, size in bounded) > len(b) // 4  # still finds much of what there is


def test_inline_changes_mark_the_changed_tokens():
    a = "    %x_8 = tt.load %x_6, %x_7 : tensor<1024x!tt.ptr<f32>, #blocked1> loc(#loc21)"
    b = "    %x_8 = tt.load %x_6, %x_9 : tensor<1024x!tt.ptr<f32>, #blocked1> loc(#loc22)"
    a_spans, b_spans = inline_changes(a, b, (loc_spans(a), loc_spans(b)))
    assert [a[s:e] for s, e in a_spans] == ["%x_7"]
    assert [b[s:e] for s, e in b_spans] == ["%x_9"]
    a_spans, _ = inline_changes(a, b)  # locations compared: their change is marked too
    assert [a[s:e] for s, e in a_spans] == ["%x_7", "#loc21"]
    assert inline_changes("tt.return", "%5 = llvm.mlir.undef : vector<1xf32>") == ([], [])


def test_loc_spans_cover_inline_and_trailing_locations():
    line = body(TTGIR).split("\n")[8]  # tt.func with one loc per argument
    spans = loc_spans(line)
    assert len(spans) == 4  # one per argument; the line ends with "{", no trailing loc
    assert all(line[s:e].strip().startswith("loc(") for s, e in spans)


def test_marks_wrap_exactly_the_changed_text_of_highlighted_html():
    from app.render import highlight_line

    rng = random.Random(3)
    lines = [line for line in split_lines(body(TTGIR)) if line.strip()]
    for line in lines:
        html = highlight_line(line, "mlir")
        for _ in range(5):
            cuts = sorted(rng.sample(range(len(line) + 1), 4))
            spans = [(cuts[0], cuts[1]), (cuts[2], cuts[3])]
            marked = _mark_html(html, spans, "d")
            assert re.sub(r"</?mark[^>]*>", "", marked) == html
            inside = "".join(re.findall(r'<mark class="d">(.*?)</mark>', marked))
            text = (
                re.sub(r"<[^>]+>", "", inside).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
            )
            assert text == "".join(line[s:e] for s, e in spans)


def test_renamed_names_are_not_marked_when_numbering_is_ignored():
    a = "    %x_8 = tt.load %x_6, %x_7 : tensor<1024x!tt.ptr<f32>, #blocked1>"
    b = "    %x_9 = tt.load %x_7, %mask_2 : tensor<1024x!tt.ptr<f32>, #blocked1>"
    renames = {"%x_6": "%x_7", "%x_7": "%x_8"}
    a_spans, b_spans = inline_changes(a, b, renames=renames, rename_definitions=True)
    assert [a[s:e] for s, e in a_spans] == ["%x_7"]  # %x_7 became %x_8, but B uses %mask_2
    assert [b[s:e] for s, e in b_spans] == ["%mask_2"]
    a_spans, _ = inline_changes(a, b)  # numbering compared: the renamed names are changes too
    assert {"%x_8", "%x_6"} <= {a[s:e] for s, e in a_spans}


def test_segments_cut_runs_where_the_flag_changes():
    flags = [line.startswith("#loc") for line in split_lines(body(TTGIR))]
    runs = list(_runs(flags, 3, len(flags) - 2))
    assert runs[0][0] == 3 and runs[-1][1] == len(flags) - 2
    assert all(stop == start for (_, stop, _), (start, _, _) in itertools.pairwise(runs))
    for start, stop, value in runs:
        assert set(flags[start:stop]) == {value}
    assert [value for _, _, value in runs] == [v for v, _ in itertools.groupby(flags[3:-2])]
    assert list(_runs(flags, 5, 5)) == []


def _op_name_reference(text: str) -> str:
    """The pairing's operation name, step by step: the rule `_op_names` does in one match."""
    stripped = text.lstrip()
    if stripped[:1] in ("%", "#"):
        eq = stripped.find(" = ")
        if eq >= 0:
            stripped = stripped[eq + 3 :]
    match = re.match(r'"[^"]*"|[^\s(<{:,=]+', stripped)
    return match.group() if match else stripped


def test_op_names_follow_the_step_by_step_rule():
    lines = [line for index in range(len(dumps())) for line in split_lines(body(index))]
    # and the edge shapes of the rule: no word after " = ", blank lines, tabs, a quoted op
    lines += ["", "  \t", "%0 = (x)", "  %1 = ", '%2 = "tt.reduce"(%1) ({', "#a = #b = c", "} loc(#loc3)"]
    assert _op_names(lines) == [_op_name_reference(line) for line in lines]
    assert "tt.load" in _op_names(lines)
