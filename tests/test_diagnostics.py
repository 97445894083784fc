"""Diagnostics and plain lines in gap text, from real Triton, MLIR and Python output.

Each fixture sits next to a `.note` saying how it was made. The Python tracebacks are made here, by
running a small script and reading its stderr.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import tarfile
import textwrap
from collections.abc import Iterable
from pathlib import Path

import pytest

from parsers.logs.diagnostics import Diagnostic, LogLines, looks_like_diagnostic_start, parse_gap
from parsers.logs.timing import TimingReport

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS_DIRS = [Path("/tmp/corpus"), Path(__file__).resolve().parents[2] / "shared" / "corpus"]
GAP_FIXTURES = [
    "compilation_error_nested_triton39.txt",
    "compilation_error_triton39.txt",
    "interpreter_error_triton39.txt",
    "mlir_diagnostics_mlir_opt.txt",
    "mlir_error_gfx1250.txt",
    "python_warning_inductor.txt",
    "timing_report_llvm_opt.txt",
    "timing_report_sm90.txt",
    "timing_report_user_time_mlir_opt.txt",
]


def fixture_lines(name: str, first_line: int = 1) -> list[tuple[int, str]]:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return list(enumerate(text.splitlines(), start=first_line))


def corpus_gap_blocks(capture: str) -> list[list[tuple[int, str]]]:
    """Gap blocks of a corpus log: every line outside a dump, where a dump runs from a line starting
    `// -----// ` to the next blank line. Skips the test when the corpus is not on this machine."""
    unpacked = CORPUS_DIRS[0] / capture / "dump.log"
    archive = CORPUS_DIRS[1] / f"{capture}.tar.xz"
    if unpacked.exists():
        with unpacked.open("rb") as log:
            return _gap_blocks(log)
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
        if block and block[-1][0] != number - 1:
            blocks.append(block)
            block = []
        block.append((number, text))
    if block:
        blocks.append(block)
    return blocks


def assert_covers(lines: list[tuple[int, str]], records: list) -> None:
    """Concatenating the records' text gives back the input, in order, each line once."""
    assert "\n".join(record.text for record in records) == "\n".join(text for _, text in lines)
    assert [record.first_line for record in records] == sorted(record.first_line for record in records)
    for record, following in itertools.pairwise(records):
        assert following.first_line == record.last_line + 1
    assert records[0].first_line == lines[0][0] and records[-1].last_line == lines[-1][0]


def diagnostics_of(records: list) -> list[Diagnostic]:
    return [record for record in records if isinstance(record, Diagnostic)]


def run_script(tmp_path: Path, source: str) -> tuple[Path, list[tuple[int, str]]]:
    """Run a Python script and return its path and its stderr lines, numbered from 1."""
    script = tmp_path / "kernel_driver.py"
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1, done.stderr
    return script, list(enumerate(done.stderr.splitlines(), start=1))


# -- MLIR diagnostics ---------------------------------------------------------------------------


def test_gfx1250_verifier_error_with_source_line_and_caret():
    lines = fixture_lines("mlir_error_gfx1250.txt", first_line=7211)
    records = parse_gap(lines, strict=True)
    assert [type(record).__name__ for record in records] == ["LogLines", "Diagnostic"]
    assert records[0] == LogLines(7211, "")
    error = records[1]
    assert (error.kind, error.severity, error.first_line, error.last_line) == ("mlir", "error", 7212, 7214)
    assert error.file == "/home/dev/kernels/kernels.py"
    assert (error.line, error.col) == (236, 5)
    assert error.message == (
        "'amdg.async_tdm_copy_local_to_global' op TDM store padding is only supported when padding "
        "interval equals the innermost block dimension (got padInterval=32, innermost dimension=64)"
    )
    assert error.text.splitlines()[1:] == [
        "    ttgl.amd.gfx1250.tdm.async_store(dst, offsets=[pid * BLOCK_M, 0], src=buf)",
        "    ^",
    ]
    assert error.notes == []
    assert_covers(lines, records)


def test_corpus_gfx1250_fail_log_has_one_error_and_nothing_else():
    blocks = corpus_gap_blocks("gfx1250_fail")
    records = [record for block in blocks for record in parse_gap(block, strict=True)]
    errors = diagnostics_of(records)
    assert len(errors) == 1
    error = errors[0]
    assert error.file is not None and error.file.endswith("kernels.py")
    assert (error.kind, error.severity, error.line, error.col, error.first_line) == (
        "mlir",
        "error",
        236,
        5,
        7212,
    )
    assert error.message.startswith("'amdg.async_tdm_copy_local_to_global' op TDM store padding")
    assert all(isinstance(record, LogLines) for record in records if record is not error)
    for block in blocks:
        assert_covers(block, parse_gap(block))


def test_mlir_opt_errors_with_notes_unknown_locations_and_a_stack_trace():
    lines = fixture_lines("mlir_diagnostics_mlir_opt.txt")
    records = parse_gap(lines, strict=True)
    assert all(isinstance(record, Diagnostic) for record in records)
    summary = [(d.first_line, d.last_line, d.file, d.line, d.col, len(d.notes)) for d in records]
    assert summary == [
        (1, 7, "dom.mlir", 3, 10, 2),
        (8, 13, "ret.mlir", 4, 23, 1),
        (14, 15, "/home/dev/kernels/k.py", 13, 5, 1),  # a path not on disk: no source line
        (16, 17, None, None, None, 1),  # <unknown>:0
        (18, 19, None, None, None, 1),  # <unknown>:0 with loc("out_ptr") in the message
        (20, 50, "dom.mlir", 3, 10, 3),  # --mlir-print-stacktrace-on-diagnostic
    ]
    dominance = records[0]
    assert dominance.message == "operand #0 does not dominate this use"
    assert dominance.notes == [
        (
            'dom.mlir:3:10: note: see current operation: %0 = "arith.addi"(%1, %arg0) '
            "<{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32"
        ),
        "dom.mlir:4:10: note: operand defined here (op in the same block)",
    ]
    assert dominance.text.splitlines()[-2:] == ["    %0 = arith.muli %arg0, %arg0 : i32", "         ^"]
    assert records[4].message.startswith("loc(\"out_ptr\"): type of return operand 0 ('i32')")
    traced = records[5]
    assert traced.notes[0] == "dom.mlir:3:10: note: diagnostic emitted with trace:"
    assert " #0 0x" in traced.text and "_start (/usr/lib/llvm-19/bin/mlir-opt" in traced.text
    assert_covers(lines, records)


def test_loc_style_and_bare_errors_from_triton_bug_reports():
    # Real output quoted in public bug reports: MLIR's default handler (meta-pytorch/triton-cpu#6)
    # and an error with no location (ROCm/triton#266), each followed by what came next in the log.
    lines = list(
        enumerate(
            [
                (
                    "loc(\"01-vector-add.py\":37:24): error: failed to legalize operation 'tt.get_program_id' "
                    "that was explicitly marked illegal"
                ),
                "error: failed to legalize operation 'tt.load' that was explicitly marked illegal",
                "Pass execution failedLLVM ERROR: Failed to translate TritonGPU to LLVM IR.",
            ],
            start=1,
        )
    )
    records = parse_gap(lines, strict=True)
    assert [type(record).__name__ for record in records] == ["Diagnostic", "Diagnostic", "LogLines"]
    located, bare = records[0], records[1]
    assert (located.file, located.line, located.col) == ("01-vector-add.py", 37, 24)
    assert (
        located.message
        == "failed to legalize operation 'tt.get_program_id' that was explicitly marked illegal"
    )
    assert (bare.file, bare.line, bare.col, bare.severity) == (None, None, None, "error")
    assert bare.message == "failed to legalize operation 'tt.load' that was explicitly marked illegal"
    assert_covers(lines, records)


# -- Python warnings and other plain lines -------------------------------------------------------


def test_inductor_user_warning_stays_log_lines():
    lines = fixture_lines("python_warning_inductor.txt", first_line=861710)
    records = parse_gap(lines, strict=True)
    assert records == [LogLines(861710, "\n".join(text for _, text in lines))]
    assert not looks_like_diagnostic_start(lines[1][1])


def test_corpus_gpu_inductor_log_is_all_log_lines_and_nothing_is_lost():
    blocks = corpus_gap_blocks("gpu_inductor")
    assert blocks
    for block in blocks:
        records = parse_gap(block, strict=True)
        assert all(isinstance(record, LogLines) for record in records)
        assert_covers(block, records)
    last = blocks[-1]
    assert last[-3][1].endswith(
        "UserWarning: Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior."
    )


@pytest.mark.parametrize("name", GAP_FIXTURES)
def test_every_fixture_line_is_covered_exactly_once(name):
    lines = fixture_lines(name)
    assert_covers(lines, parse_gap(lines, strict=True))


# -- Python tracebacks -----------------------------------------------------------------------------


def test_chained_traceback_with_a_multi_line_message(tmp_path):
    script, lines = run_script(
        tmp_path,
        """\
        import sys

        print("compiling add_kernel", file=sys.stderr, flush=True)


        def load_config(name):
            return {}[name]


        def compile_kernel(name):
            try:
                load_config(name)
            except KeyError as error:
                raise RuntimeError(f"cannot compile {name}:\\nno autotune config") from error


        compile_kernel("add_kernel")
        """,
    )
    records = parse_gap(lines, strict=True)
    assert [type(record).__name__ for record in records] == ["LogLines", "Diagnostic"]
    assert records[0].text == "compiling add_kernel"
    failure = records[1]
    assert (failure.kind, failure.severity, failure.first_line) == ("traceback", "error", 2)
    assert failure.message == "RuntimeError: cannot compile add_kernel:"
    assert failure.text.endswith("RuntimeError: cannot compile add_kernel:\nno autotune config")
    assert "The above exception was the direct cause of the following exception:" in failure.text
    assert (failure.file, failure.line, failure.col) == (str(script), 14, None)
    assert failure.notes == ["KeyError: 'add_kernel'"]
    assert_covers(lines, records)


def test_exception_during_handling_is_one_record_and_a_later_warning_is_not(tmp_path):
    script, lines = run_script(
        tmp_path,
        """\
        import traceback
        import warnings

        try:
            try:
                1 / 0
            except ZeroDivisionError:
                {}["num_warps"]
        except KeyError:
            traceback.print_exc()
        warnings.warn("falling back to the default config")
        raise SystemExit(1)
        """,
    )
    records = parse_gap(lines, strict=True)
    assert [type(record).__name__ for record in records] == ["Diagnostic", "LogLines"]
    failure = records[0]
    assert failure.kind == "traceback"
    assert failure.message == "KeyError: 'num_warps'"
    assert failure.notes == ["ZeroDivisionError: division by zero"]
    assert "During handling of the above exception, another exception occurred:" in failure.text
    assert (failure.file, failure.line) == (str(script), 8)
    assert records[1].text.splitlines()[0].endswith("UserWarning: falling back to the default config")
    assert_covers(lines, records)


def test_exception_group_traceback(tmp_path):
    script, lines = run_script(
        tmp_path,
        """\
        def compile_all():
            raise ExceptionGroup("2 kernels failed", [ValueError("bad BLOCK_SIZE"), KeyError("add_kernel")])


        compile_all()
        """,
    )
    records = parse_gap(lines, strict=True)
    assert len(records) == 1
    failure = records[0]
    assert failure.kind == "traceback"
    assert failure.message == "ExceptionGroup: 2 kernels failed (2 sub-exceptions)"
    assert failure.notes == ["ValueError: bad BLOCK_SIZE", "KeyError: 'add_kernel'"]
    assert (failure.file, failure.line) == (str(script), 2)
    assert_covers(lines, records)


def test_triton_compilation_error_points_into_the_kernel():
    lines = fixture_lines("compilation_error_triton39.txt")
    records = parse_gap(lines, strict=True)
    assert [type(record).__name__ for record in records] == ["LogLines", "Diagnostic"]
    assert "UserWarning: TRITON_DEFAULT_FP_FUSION is unset" in records[0].text
    failure = records[1]
    assert (failure.kind, failure.severity, failure.first_line, failure.last_line) == (
        "compilation_error",
        "error",
        3,
        31,
    )
    assert failure.message == "arange's range must be a power of 2"
    # "at 4:28:": line 4 of the function's source, counting its def line as 1; col 0-based.
    assert (failure.file, failure.line, failure.col) == (None, 4, 28)
    assert failure.notes == ["ValueError: arange's range must be a power of 2"]
    assert failure.kernel == "arange_kernel"  # the excerpt's def line
    assert failure.frames[-1][0].endswith("triton/compiler/compiler.py")
    # The source excerpt holds a blank line; the record still runs to the error under the caret.
    assert failure.text.splitlines()[-6:] == [
        "def arange_kernel(out_ptr, BLOCK: tl.constexpr):",
        "    pid = tl.program_id(0)",
        "",
        "    offsets = pid * BLOCK + tl.arange(0, 10)",
        "                            ^",
        "arange's range must be a power of 2",
    ]
    assert_covers(lines, records)


def test_nested_compilation_error_reports_the_innermost_location():
    lines = fixture_lines("compilation_error_nested_triton39.txt")
    records = parse_gap(lines, strict=True)
    assert len(records) == 1
    failure = records[0]
    assert failure.kind == "compilation_error"
    # The helper's "at 2:25:" with its message, not the caller's "at 2:13:", which has none.
    assert (failure.line, failure.col, failure.message) == (2, 25, "arange's range must be a power of 2")
    assert failure.notes == [
        "ValueError: arange's range must be a power of 2",
        "triton.compiler.errors.CompilationError: at 2:25:",
    ]
    assert failure.text.endswith("    values = load_helper(out_ptr, BLOCK)\n             ^")
    # The compilation is of the kernel triton.compile was given, not of the helper that failed in it.
    assert failure.kernel == "outer_kernel"
    assert_covers(lines, records)


def test_mlir_error_then_traceback_then_timing_are_separate_records(tmp_path):
    # Three real outputs in the order a failing Triton run prints them.
    _, traceback_lines = run_script(tmp_path, 'raise RuntimeError("PassManager::run failed")\n')
    texts = (
        [text for _, text in fixture_lines("mlir_error_gfx1250.txt")[1:]]
        + [text for _, text in traceback_lines]
        + [text for _, text in fixture_lines("timing_report_sm90.txt")[:19]]
    )
    lines = list(enumerate(texts, start=1))
    records = parse_gap(lines, strict=True)
    kinds = [record.kind if isinstance(record, Diagnostic) else type(record).__name__ for record in records]
    assert kinds == ["mlir", "traceback", "TimingReport"]
    assert records[1].message == "RuntimeError: PassManager::run failed"
    assert isinstance(records[2], TimingReport) and records[2].complete
    assert_covers(lines, records)


def test_interpreter_traceback_keeps_every_frame_and_names_no_kernel_itself():
    lines = fixture_lines("interpreter_error_triton39.txt")
    [failure] = parse_gap(lines, strict=True)
    assert (failure.kind, failure.kernel) == ("traceback", None)  # the frames say which: see linking
    assert failure.message == 'triton.runtime.errors.InterpreterError: ValueError("arange\'s range must be a power of 2")'
    assert ("/tmp/irl_gen/tc/kernels.py", 9) in failure.frames
    assert failure.frames[-1] == ("/tmp/irl_tritonvenv/lib/python3.11/site-packages/triton/runtime/interpreter.py", 1515)
