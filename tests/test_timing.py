"""Timing reports in gap text, from real MLIR and LLVM output (fixtures say how each was made)."""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterable
from pathlib import Path

import pytest

from parsers.logs.diagnostics import LogLines, parse_gap
from parsers.logs.timing import TIMING_BANNER, TimingReport, looks_like_timing_start, parse_timing_at

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS_DIRS = [Path("/tmp/corpus"), Path(__file__).resolve().parents[2] / "shared" / "corpus"]


def fixture_lines(name: str, first_line: int = 1) -> list[tuple[int, str]]:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return list(enumerate(text.splitlines(), start=first_line))


def corpus_gap_blocks(capture: str) -> list[list[tuple[int, str]]]:
    """Gap blocks of a corpus log: every line outside a dump, where a dump runs from a line starting
    `// -----// ` to the next blank line. Skips the test when the corpus is not on this machine."""
    unpacked = CORPUS_DIRS[0] / capture / "dump.log"
    archive = CORPUS_DIRS[1] / f"{capture}.tar.xz"
    if unpacked.exists():
        return _gap_blocks(unpacked.read_bytes().splitlines())
    if archive.exists():
        with tarfile.open(archive) as tar:
            member = tar.extractfile(f"{capture}/dump.log")
            assert member is not None
            return _gap_blocks(member)
    pytest.skip(f"corpus capture {capture} is not on this machine")


def _gap_blocks(raw_lines: Iterable[bytes]) -> list[list[tuple[int, str]]]:
    blocks: list[list[tuple[int, str]]] = []
    block: list[tuple[int, str]] = []
    in_dump = False
    for number, raw in enumerate(raw_lines, start=1):
        text = raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", "replace")
        if in_dump:
            in_dump = bool(text)
            continue
        if text.startswith("// -----// "):
            in_dump = True
            if block:
                blocks.append(block)
                block = []
            continue
        block.append((number, text))
    if block:
        blocks.append(block)
    return blocks


def reports_of(records: list) -> list[TimingReport]:
    return [record for record in records if isinstance(record, TimingReport)]


def assert_covers(lines: list[tuple[int, str]], records: list) -> None:
    assert "\n".join(record.text for record in records) == "\n".join(text for _, text in lines)
    numbers = [record.first_line for record in records]
    assert numbers == sorted(numbers)
    assert numbers[0] == lines[0][0]
    assert records[-1].last_line == lines[-1][0]


def test_sm90_log_gives_three_reports_with_the_totals_it_prints():
    lines = fixture_lines("timing_report_sm90.txt")
    records = parse_gap(lines, strict=True)
    assert all(isinstance(record, TimingReport) for record in records)
    assert len(records) == 3
    printed_totals = [
        float(t) for t in re.findall(r"Total Execution Time: ([\d.]+) seconds", lines_text(lines))
    ]
    assert [report.total for report in records] == printed_totals == [0.0034, 0.0429, 0.2280]
    assert [report.first_line for report in records] == [1, 20, 78]
    assert [report.last_line for report in records] == [19, 77, 113]
    assert all(report.complete and report.title == "Execution time report" for report in records)
    first = [
        (r.entries[0].name, r.entries[0].depth, r.entries[0].wall, r.entries[0].percent) for r in records
    ]
    assert first == [
        ("InlinerPass", 0, 0.0015, 44.7),
        ("ConvertTritonToTritonGPU", 0, 0.0022, 5.1),
        ("TritonGPUCombineTensorSelectAndIf", 0, 0.0006, 0.3),
    ]
    for report in records:
        # Every row of the report is an entry: 6 header lines, then one row per line.
        assert len(report.entries) == report.text.count("\n") + 1 - 6
        assert report.entries[-1].name == "Total" and report.entries[-1].wall == report.total
        assert report.entries[-2].name == "Rest"
        assert all(entry.user is None for entry in report.entries)
    assert_covers(lines, records)


def lines_text(lines: list[tuple[int, str]]) -> str:
    return "\n".join(text for _, text in lines)


def test_nesting_analyses_and_negative_rest_in_the_inliner_report():
    report = reports_of(parse_gap(fixture_lines("timing_report_sm90.txt")))[0]
    rows = [(e.name, e.depth, e.analysis) for e in report.entries[:4]]
    assert rows == [
        ("InlinerPass", 0, False),
        ("CallGraph", 1, True),
        ("'tt.func' Pipeline", 0, False),
        ("CanonicalizerPass", 1, False),
    ]
    rest = report.entries[-2]
    assert (rest.name, rest.wall, rest.percent) == ("Rest", -0.0003, -9.2)


def test_user_time_column_from_a_multithreaded_mlir_opt_run():
    lines = fixture_lines("timing_report_user_time_mlir_opt.txt")
    records = parse_gap(lines, strict=True)
    assert len(records) == 1
    report = records[0]
    assert isinstance(report, TimingReport) and report.complete
    assert report.total == 0.0753
    pipeline = report.entries[1]
    assert (pipeline.name, pipeline.depth, pipeline.user, pipeline.wall, pipeline.percent) == (
        "'func.func' Pipeline",
        0,
        0.0293,
        0.0157,
        20.9,
    )
    dominance = next(e for e in report.entries if e.name == "DominanceInfo")
    assert (dominance.depth, dominance.analysis, dominance.user) == (2, True, 0.0001)
    total = report.entries[-1]
    assert (total.name, total.user, total.wall) == ("Total", 0.1046, 0.0753)
    assert_covers(lines, records)


def test_llvm_legacy_pass_execution_timing_tables():
    lines = fixture_lines("timing_report_llvm_opt.txt")
    records = parse_gap(lines, strict=True)
    reports = reports_of(records)
    assert [report.title for report in reports] == ["Pass execution timing report", "LLVM IR Parsing"]
    passes, parsing = reports
    # "Total Execution Time: 0.0026 seconds (0.0026 wall clock)": the total is the wall clock time.
    assert (passes.total, parsing.total) == (0.0026, 0.0001)
    assert len(passes.entries) == 92 and passes.last_line == 98
    first = passes.entries[0]
    assert (first.name, first.depth, first.user, first.wall, first.percent) == (
        "ModuleInlinerWrapperPass",
        0,
        0.0002,
        0.0006,
        21.0,
    )
    names = {entry.name for entry in passes.entries}
    assert "RequireAnalysisPass<llvm::GlobalsAA, llvm::Module>" in names
    assert all(entry.depth == 0 and not entry.analysis for entry in passes.entries)
    assert [entry.name for entry in parsing.entries] == ["Parse IR", "Total"]
    # The blank line LLVM prints after each table is not part of the report.
    assert [type(record).__name__ for record in records] == [
        "TimingReport",
        "LogLines",
        "TimingReport",
        "LogLines",
    ]
    assert_covers(lines, records)


def test_report_cut_off_by_a_killed_process_is_kept_as_incomplete():
    lines = fixture_lines("timing_report_sm90.txt")[:12]
    records = parse_gap(lines, strict=True)
    assert len(records) == 1
    report = records[0]
    assert isinstance(report, TimingReport)
    assert not report.complete
    assert [entry.name for entry in report.entries] == [
        "InlinerPass",
        "CallGraph",
        "'tt.func' Pipeline",
        "CanonicalizerPass",
        "CanonicalizerPass",
        "TritonCombineOps",
    ]
    assert report.total == 0.0034  # from the Total Execution Time line
    assert_covers(lines, records)


def test_lines_after_a_cut_off_report_stay_log_lines():
    lines = fixture_lines("timing_report_sm90.txt")[:10] + [(11, "compiled matmul for cuda:90")]
    records = parse_gap(lines, strict=True)
    assert [type(record).__name__ for record in records] == ["TimingReport", "LogLines"]
    assert records[1].text == "compiled matmul for cuda:90"
    assert_covers(lines, records)


def test_a_banner_without_a_report_is_plain_text():
    lines = [(1, TIMING_BANNER), (2, "some other tool's banner"), (3, "no table follows")]
    assert parse_timing_at(lines, 0) is None
    records = parse_gap(lines, strict=True)
    assert records == [LogLines(1, "\n".join(text for _, text in lines))]


def test_looks_like_timing_start_is_the_banner_only():
    assert looks_like_timing_start(TIMING_BANNER)
    assert looks_like_timing_start(
        "===-------------------------------------------------------------------------==="
    )
    assert not looks_like_timing_start("                         ... Execution time report ...")
    assert not looks_like_timing_start("// -----// IR Dump Before InlinerPass")


def test_corpus_sm90_timing_log_has_exactly_three_reports():
    blocks = corpus_gap_blocks("sm90_timing")
    records = [record for block in blocks for record in parse_gap(block, strict=True)]
    reports = reports_of(records)
    assert len(reports) == 3 and len(records) == 3
    assert [report.total for report in reports] == [0.0034, 0.0429, 0.2280]
    assert [report.entries[0].name for report in reports] == [
        "InlinerPass",
        "ConvertTritonToTritonGPU",
        "TritonGPUCombineTensorSelectAndIf",
    ]


def test_corpus_logs_without_timing_have_no_reports():
    for capture in ("gfx1250_fail", "sm90_llvm"):
        for block in corpus_gap_blocks(capture):
            assert reports_of(parse_gap(block, strict=True)) == []
