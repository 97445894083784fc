"""app.highlight: the lexers, layout explanations and hardware-op groups, on the real corpus.

The corpus archives in ../shared/corpus are unpacked (text files only) into a session tmp dir;
tests that need them skip when ../shared is absent. The lines in the golden-token tests are
copied from the corpus files named beside them.

How the whole-corpus lexing tests stay fast: the corpus holds ~6,300 MLIR dumps, most of them
near-duplicates. Bodies are deduplicated by hash, then by line: the lexers are line-local (a
newline always returns to the root state, which test_mlir_lexer_is_line_local checks), so
lexing every distinct line is lexing every body. Lines are compared with their digits folded to
0 (`%c1024_i32` and `%c64_i32` lex alike, which test_digit_folding_keeps_token_types checks),
which leaves ~10,000 distinct lines instead of ~460,000.
"""

from __future__ import annotations

import hashlib
import re
import tarfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from pygments.lexer import Lexer, RegexLexer
from pygments.token import (
    Comment,
    Error,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    _TokenType,
)

from app import render
from app.highlight import KINDS, PythonSourceLexer, lexer_for
from app.highlight.asm_lexers import AmdgcnLexer, StrictAmdgcnLexer, StrictTritonLlvmLexer, TritonLlvmLexer
from app.highlight.hwops import GROUPS, GROUPS_BY_KEY, classify_line, count_groups
from app.highlight.layouts import Layout, explain_encoding, find_layouts, read_encoding
from app.highlight.mlir_lexer import MLIRLexer, StrictMLIRLexer
from app.highlight.ptx_lexer import PTXLexer, StrictPTXLexer

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
# what the tests read; binaries (.cubin, .hsaco, .so) are left in the archives
_TEXT_SUFFIXES = {".log", ".mlir", ".ttir", ".ttgir", ".source", ".glir", ".ptx", ".llir", ".amdgcn", ".py"}
_MLIR_SUFFIXES = {".ttir", ".ttgir", ".source", ".glir"}


# -- corpus fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``corpus("sm90_mix")`` → the unpacked capture folder (text files only), unpacked once."""
    if not any(CORPUS.glob("*.tar.xz")):
        pytest.skip(f"corpus not found at {CORPUS}")
    root = tmp_path_factory.mktemp("highlight-corpus")
    unpacked: dict[str, Path] = {}

    def unpack(name: str) -> Path:
        if name not in unpacked:
            archive = CORPUS / f"{name}.tar.xz"
            if not archive.exists():
                pytest.skip(f"corpus archive {archive} is absent")
            with tarfile.open(archive) as tar:
                members = [
                    member
                    for member in tar.getmembers()
                    if member.isdir() or (member.isreg() and Path(member.name).suffix in _TEXT_SUFFIXES)
                ]
                tar.extractall(root, members=members, filter="data")
            unpacked[name] = root / name
        return unpacked[name]

    return unpack


@pytest.fixture(scope="session")
def all_captures(corpus: Callable[[str], Path]) -> list[Path]:
    return [corpus(archive.name.removesuffix(".tar.xz")) for archive in sorted(CORPUS.glob("*.tar.xz"))]


def _cached(captures: Iterable[Path], suffixes: set[str]) -> list[Path]:
    """Cached stage files, and TRITON_KERNEL_DUMP's copies of them under src/kerneldump."""
    files = []
    for capture in captures:
        for path in sorted(capture.rglob("*")):
            in_cache = "cache" in path.parts or "kerneldump" in path.parts
            if in_cache and path.suffix in suffixes and path.is_file():
                files.append(path)
    return files


def _one(capture: Path, pattern: str) -> Path:
    matches = sorted(capture.glob(pattern))
    assert len(matches) == 1, f"expected one {pattern} in {capture}, found {matches}"
    return matches[0]


# -- splitting logs into dump bodies --------------------------------------------------------------

_ANY_BANNER = re.compile(r"^(?:// -----//|; \*\*\* IR Dump|\*\*\* IR Dump|# \*\*\* IR Dump)")
_LLVM_IR_BANNER = re.compile(r"^(?:; \*\*\* IR Dump|\*\*\* IR Dump)")  # not MIR's `# *** IR Dump`


def _bodies(path: Path, starts: Callable[[str], bool]) -> list[str]:
    """The text after each banner for which ``starts(banner)``, up to the next banner of any kind."""
    bodies: list[str] = []
    current: list[str] | None = None
    with path.open(encoding="utf-8", errors="replace") as log:
        for line in log:
            if _ANY_BANNER.match(line):
                if current is not None:
                    bodies.append("".join(current))
                current = [] if starts(line) else None
            elif current is not None:
                current.append(line)
    if current is not None:
        bodies.append("".join(current))
    return bodies


def mlir_bodies(path: Path) -> list[str]:
    """MLIR dump bodies (pass dumps and the pipeliner's and warp-specializer's internal dumps)."""
    return _bodies(path, lambda banner: banner.startswith("// -----//") and "IR Dump" in banner)


def llvm_ir_bodies(path: Path) -> list[str]:
    """LLVM IR dump bodies (new pass manager and legacy IR-level banners; MIR dumps excluded)."""
    return _bodies(path, lambda banner: bool(_LLVM_IR_BANNER.match(banner)))


def module_of(body: str) -> str:
    """The module itself: a dump ends with a blank line, after which a log may hold anything."""
    return body.split("\n\n", 1)[0] + "\n"


_DIGITS = re.compile(r"\d+")


def distinct_lines(texts: Iterable[str]) -> list[str]:
    """Distinct lines over distinct texts, digits folded to 0, sorted."""
    seen_texts: set[bytes] = set()
    raw: set[str] = set()
    for text in texts:
        digest = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).digest()
        if digest not in seen_texts:
            seen_texts.add(digest)
            raw.update(text.splitlines())
    return sorted({_DIGITS.sub("0", line) for line in raw})


def error_report(lexer: Lexer, lines: list[str], limit: int = 10) -> list[str]:
    """The lines holding an Error token, each with the error's column: [] when clean."""
    text = "\n".join(lines) + "\n"
    bad: dict[int, str] = {}
    for index, token, _value in lexer.get_tokens_unprocessed(text):
        if token in Error:
            start = text.rfind("\n", 0, index) + 1
            end = text.find("\n", index)
            bad.setdefault(start, f"col {index - start}: {text[start:end][:200]}")
            if len(bad) >= limit:
                break
    return list(bad.values())


@pytest.fixture(scope="session")
def mlir_texts(all_captures: list[Path]) -> dict[str, list[str]]:
    """Every MLIR text of the corpus: full dump bodies, the modules within them, cached files."""
    bodies: list[str] = []
    for capture in all_captures:
        for log in [capture / "dump.log", capture / "src" / "dumpfile.mlir"]:
            if log.exists():
                bodies.extend(mlir_bodies(log))
    cached = [path.read_text(encoding="utf-8") for path in _cached(all_captures, _MLIR_SUFFIXES)]
    return {"bodies": bodies, "modules": [module_of(body) for body in bodies], "cached": cached}


def tokens(lexer: Lexer, line: str) -> list[tuple[_TokenType, str]]:
    """Non-blank tokens of one line, values stripped (punctuation keeps its trailing spaces)."""
    return [(token, value.strip()) for token, value in lexer.get_tokens(line) if value.strip()]


# -- MLIR lexer: the whole corpus ------------------------------------------------------------------


def test_corpus_has_the_dumps_it_claims(mlir_texts: dict[str, list[str]]) -> None:
    # README: 6,334 = 485 + 141 + 124 + 280 + 92 + 76 + 76 + 83 + 88 + 288 + 4,445 pass dumps,
    # plus the pipeliner-internal dumps; a wrong splitter would make the tests below vacuous
    assert len(mlir_texts["bodies"]) >= 6000
    assert len(mlir_texts["cached"]) >= 290  # .ttir, .ttgir, .source and .glir files


def test_mlir_lexer_covers_every_corpus_line(mlir_texts: dict[str, list[str]]) -> None:
    """The strict lexer turns anything its grammar does not know into Error: there is none."""
    lines = distinct_lines(mlir_texts["modules"] + mlir_texts["cached"])
    assert len(lines) > 5000
    started = time.perf_counter()
    assert error_report(StrictMLIRLexer(), lines) == []
    assert time.perf_counter() - started < 30


def test_mlir_lexer_emits_no_error_token_on_any_dump_body(mlir_texts: dict[str, list[str]]) -> None:
    """Whole bodies, including what logs put after a module (warnings, nanobind leak reports)."""
    lines = distinct_lines(mlir_texts["bodies"] + mlir_texts["cached"])
    assert error_report(lexer_for("ttgir"), lines) == []


def test_mlir_lexer_is_line_local(mlir_texts: dict[str, list[str]]) -> None:
    """Lexing a body whole gives the same tokens as lexing its lines one by one."""
    lexer = MLIRLexer(stripnl=False)
    samples = [text for text in mlir_texts["cached"] if len(text) < 200_000][::7][:20]
    assert samples
    for text in samples:
        whole = [(token, value) for _index, token, value in lexer.get_tokens_unprocessed(text)]
        by_line = []
        for line in text.splitlines(keepends=True):
            by_line.extend((token, value) for _index, token, value in lexer.get_tokens_unprocessed(line))
        assert whole == by_line


def test_digit_folding_keeps_token_types(mlir_texts: dict[str, list[str]]) -> None:
    lexer = MLIRLexer(stripnl=False)
    raw = sorted({line for text in mlir_texts["cached"] for line in text.splitlines()})
    for line in raw[:: max(1, len(raw) // 3000)]:
        folded = _DIGITS.sub("0", line)
        assert [t for _i, t, _v in lexer.get_tokens_unprocessed(line)] == [
            t for _i, t, _v in lexer.get_tokens_unprocessed(folded)
        ], line


def test_fast_loop_gives_pygments_tokens(corpus: Callable[[str], Path]) -> None:
    """FastRegexLexer's combined-regex loop against RegexLexer's own loop, on real files."""
    capture = corpus("sm90_gluon")
    for lexer, pattern in [
        (MLIRLexer(), "cache/*/gluon_wgmma_kernel.ttgir"),
        (MLIRLexer(), "cache/*/gluon_wgmma_kernel.glir"),
        (PTXLexer(), "cache/*/gluon_wgmma_kernel.ptx"),
        (TritonLlvmLexer(), "cache/*/gluon_wgmma_kernel.llir"),
    ]:
        text = _one(capture, pattern).read_text()
        assert list(lexer.get_tokens_unprocessed(text)) == list(
            RegexLexer.get_tokens_unprocessed(lexer, text)
        ), pattern
    text = _one(corpus("gfx1250_tdm"), "cache/*/gluon_tdm_load_store_kernel.amdgcn").read_text()
    lexer = AmdgcnLexer()
    assert list(lexer.get_tokens_unprocessed(text)) == list(RegexLexer.get_tokens_unprocessed(lexer, text))


def test_fast_python_loop_gives_pygments_tokens(corpus: Callable[[str], Path]) -> None:
    """The source pane's lexer: Pygments' Python rules (some with leading `(?i)`-style flags, which
    the combined regex scopes to their rule) on the combined loop, against Pygments' own loop."""
    lexer = PythonSourceLexer()
    sources = [path.read_text() for name in ("sm90_mix", "gfx942_mix") for path in corpus(name).glob("src/*.py")]
    assert len(sources) >= 2
    # the renderer's own modules: f-strings, decorators, type hints
    sources.extend(path.read_text() for path in sorted(Path(render.__file__).parent.glob("*.py")))
    for text in sources:
        assert list(lexer.get_tokens_unprocessed(text)) == list(RegexLexer.get_tokens_unprocessed(lexer, text))


def test_mlir_lexer_is_fast_on_a_big_snapshot(corpus: Callable[[str], Path]) -> None:
    """The largest LLVM-dialect dump of gpu_autotune: 18,000 lines, 6.7 MB of 128-member structs."""
    body = max(mlir_bodies(corpus("gpu_autotune") / "dump.log"), key=len)
    assert body.count("\n") > 10_000
    started = time.perf_counter()
    count = sum(1 for _ in lexer_for("mlir").get_tokens(body))
    assert count > 100_000
    assert time.perf_counter() - started < 15  # about 1 s on a 2-core machine


# -- MLIR lexer: golden tokens ---------------------------------------------------------------------


def test_mlir_golden_wgmma_line() -> None:
    # sm90_mix cache/*/matmul_descriptor_kernel.ttgir
    line = (
        "      %acc_34 = ttng.warp_group_dot %a_33, %acc_32, %acc_19 {inputPrecision = 0 : i32, isAsync = true}"
        " : !ttg.memdesc<128x64xf16, #shared, #smem, mutable> * !ttg.memdesc<64x128xf16, #shared2, #smem,"
        " mutable> -> tensor<128x128xf32, #mma> loc(#loc33)"
    )
    assert tokens(MLIRLexer(), line) == [
        (Name.Variable, "%acc_34"),
        (Operator, "="),
        (Name.Function, "ttng.warp_group_dot"),
        (Name.Variable, "%a_33"),
        (Punctuation, ","),
        (Name.Variable, "%acc_32"),
        (Punctuation, ","),
        (Name.Variable, "%acc_19"),
        (Punctuation, "{"),
        (Name.Attribute, "inputPrecision"),
        (Operator, "="),
        (Number.Integer, "0"),
        (Punctuation, ":"),
        (Keyword.Type, "i32"),
        (Punctuation, ","),
        (Name.Attribute, "isAsync"),
        (Operator, "="),
        (Keyword.Constant, "true"),
        (Punctuation, "}"),
        (Punctuation, ":"),
        (Keyword.Type, "!ttg.memdesc"),
        (Punctuation, "<"),
        (Keyword.Type, "128x64x"),
        (Keyword.Type, "f16"),
        (Punctuation, ","),
        (Name.Decorator, "#shared"),
        (Punctuation, ","),
        (Name.Decorator, "#smem"),
        (Punctuation, ","),
        (Keyword, "mutable"),
        (Punctuation, ">"),
        (Operator, "*"),
        (Keyword.Type, "!ttg.memdesc"),
        (Punctuation, "<"),
        (Keyword.Type, "64x128x"),
        (Keyword.Type, "f16"),
        (Punctuation, ","),
        (Name.Decorator, "#shared2"),
        (Punctuation, ","),
        (Name.Decorator, "#smem"),
        (Punctuation, ","),
        (Keyword, "mutable"),
        (Punctuation, ">"),
        (Punctuation, "->"),
        (Keyword.Type, "tensor"),
        (Punctuation, "<"),
        (Keyword.Type, "128x128x"),
        (Keyword.Type, "f32"),
        (Punctuation, ","),
        (Name.Decorator, "#mma"),
        (Punctuation, ">"),
        (Comment.Special, "loc(#loc33)"),
    ]


def test_mlir_golden_alias_definitions() -> None:
    # sm90_mix cache/*/matmul_kernel.ttgir, lines 1 and 6; a #loc line from its bottom
    assert tokens(MLIRLexer(), "#smem = #ttg.shared_memory") == [
        (Name.Decorator, "#smem"),
        (Operator, "="),
        (Name.Builtin, "#ttg.shared_memory"),
    ]
    assert tokens(
        MLIRLexer(),
        "#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [8, 1],"
        " order = [1, 0]}>",
    )[:8] == [
        (Name.Decorator, "#blocked"),
        (Operator, "="),
        (Name.Builtin, "#ttg.blocked"),
        (Punctuation, "<"),
        (Punctuation, "{"),
        (Name.Attribute, "sizePerThread"),
        (Operator, "="),
        (Punctuation, "["),
    ]
    # a whole location alias line is one hideable token, nested or not
    for line in ['#loc17 = loc("b_ptr"(#loc))', "#loc38 = loc(callsite(#loc10 at #loc32))"]:
        assert tokens(MLIRLexer(), line) == [(Comment.Special, line)]


def test_mlir_golden_function_and_block_arguments() -> None:
    # sm90_mix dump.log (softmax_kernel): a reduce region's block arguments with inline locs
    assert tokens(MLIRLexer(), "    ^bb0(%arg1: f32 loc(unknown), %arg2: f32 loc(unknown)):") == [
        (Name.Label, "^bb0"),
        (Punctuation, "("),
        (Name.Variable, "%arg1"),
        (Punctuation, ":"),
        (Keyword.Type, "f32"),
        (Comment.Special, "loc(unknown)"),
        (Punctuation, ","),
        (Name.Variable, "%arg2"),
        (Punctuation, ":"),
        (Keyword.Type, "f32"),
        (Comment.Special, "loc(unknown)"),
        (Punctuation, ")"),
        (Punctuation, ":"),
    ]
    # sm90_mix cache/*/matmul_descriptor_kernel.ttgir (start of the signature)
    assert tokens(
        MLIRLexer(),
        '  tt.func public @matmul_descriptor_kernel(%a_ptr: !tt.ptr<f16> {tt.divisibility = 16 : i32} loc("a_ptr"(#loc)),',
    ) == [
        (Name.Function, "tt.func"),
        (Keyword, "public"),
        (Name.Entity, "@matmul_descriptor_kernel"),
        (Punctuation, "("),
        (Name.Variable, "%a_ptr"),
        (Punctuation, ":"),
        (Keyword.Type, "!tt.ptr"),
        (Punctuation, "<"),
        (Keyword.Type, "f16"),
        (Punctuation, ">"),
        (Punctuation, "{"),
        (Name.Attribute, "tt.divisibility"),
        (Operator, "="),
        (Number.Integer, "16"),
        (Punctuation, ":"),
        (Keyword.Type, "i32"),
        (Punctuation, "}"),
        (Comment.Special, 'loc("a_ptr"(#loc))'),
        (Punctuation, ","),
    ]


def test_mlir_golden_generic_and_terminator_ops() -> None:
    # sm90_mix dump.log: the generic form of tt.reduce and its terminator
    assert tokens(MLIRLexer(), '    %0 = "tt.reduce"(%input) <{axis = 0 : i32}> ({')[:4] == [
        (Name.Variable, "%0"),
        (Operator, "="),
        (Name.Function, '"tt.reduce"'),
        (Punctuation, "("),
    ]
    assert tokens(MLIRLexer(), "      tt.reduce.return %2 : f32 loc(#loc20)") == [
        (Name.Function, "tt.reduce.return"),
        (Name.Variable, "%2"),
        (Punctuation, ":"),
        (Keyword.Type, "f32"),
        (Comment.Special, "loc(#loc20)"),
    ]


def test_mlir_golden_constants_and_quoted_symbols() -> None:
    # sm90_mix matmul_descriptor_kernel.ttgir; gpu_autotune dump.log
    assert tokens(MLIRLexer(), "    %c-1_i32 = arith.constant -1 : i32 loc(#loc1)") == [
        (Name.Variable, "%c-1_i32"),
        (Operator, "="),
        (Name.Function, "arith.constant"),
        (Number.Integer, "-1"),
        (Punctuation, ":"),
        (Keyword.Type, "i32"),
        (Comment.Special, "loc(#loc1)"),
    ]
    assert (Number.Float, "0.000000e+00") in tokens(
        MLIRLexer(), "    %cst = arith.constant dense<0.000000e+00> : tensor<128x128xf32, #mma> loc(#loc1)"
    )
    symbol = '@"triton.language.standard.zeros____(0, 0)cconstexpr_128__(0, 1)cconstexpr_128__(1,)cconstexpr_fp32_"'
    line = f"    %acc = tt.call {symbol}() : () -> tensor<128x128xf32> loc(#loc103)"
    assert tokens(MLIRLexer(), line)[:4] == [
        (Name.Variable, "%acc"),
        (Operator, "="),
        (Name.Function, "tt.call"),
        (Name.Entity, symbol),
    ]


def test_mlir_golden_llvm_dialect() -> None:
    # sm90_llvm dump.log, the last MLIR dump: an 8-member struct is one type token
    line = (
        "    %offsets_54 = llvm.insertvalue %offsets_45, %offsets_53[0] : "
        "!llvm.struct<(i32, i32, i32, i32, i32, i32, i32, i32)>  loc(#loc19)"
    )
    assert tokens(MLIRLexer(), line) == [
        (Name.Variable, "%offsets_54"),
        (Operator, "="),
        (Name.Function, "llvm.insertvalue"),
        (Name.Variable, "%offsets_45"),
        (Punctuation, ","),
        (Name.Variable, "%offsets_53"),
        (Punctuation, "["),
        (Number.Integer, "0"),
        (Punctuation, "]"),
        (Punctuation, ":"),
        (Keyword.Type, "!llvm.struct"),
        (Punctuation, "<"),
        (Punctuation, "("),
        (Keyword.Type, "i32, i32, i32, i32, i32, i32, i32, i32"),
        (Punctuation, ")"),
        (Punctuation, ">"),
        (Comment.Special, "loc(#loc19)"),
    ]
    asm = (
        '    %25 = llvm.inline_asm has_side_effects asm_dialect = att operand_attrs = [] "@$5 st.global.v4.b32'
        ' [ $4 + 0 ], { $0, $1, $2, $3 };", "r,r,r,r,l,b" %18, %20, %22, %24, %7, %mask : (i32, i32, i32,'
        " i32, !llvm.ptr<1>, i1) -> !llvm.void loc(#loc12)"
    )
    asm_tokens = tokens(MLIRLexer(), asm)
    assert (Name.Function, "llvm.inline_asm") in asm_tokens
    assert (String.Double, '"@$5 st.global.v4.b32 [ $4 + 0 ], { $0, $1, $2, $3 };"') in asm_tokens


def test_mlir_golden_old_and_gluon_spellings() -> None:
    # old_3.1_sm90 dump.log; sm90_gluon cache/*/gluon_coalesced_kernel.source
    assert tokens(
        MLIRLexer(),
        "      %47 = triton_gpu.local_alloc %46 : (tensor<128x64xf16, #blocked>) -> !tt.memdesc<128x64xf16,"
        " #shared> loc(#loc22)",
    )[:3] == [(Name.Variable, "%47"), (Operator, "="), (Name.Function, "triton_gpu.local_alloc")]
    gluon = tokens(
        MLIRLexer(),
        "    %idx_x_10 = tt.splat %idx_x_8 : i32 -> tensor<64xi32, #gluon.coalesced_encoding> loc(#loc28)",
    )
    assert (Name.Builtin, "#gluon.coalesced_encoding") in gluon


def test_mlir_lexer_survives_garbage() -> None:
    """Truncated and interleaved text: Text where unknown, never an exception or an Error."""
    for text in [
        '    %x = tt.load %p loc(callsite("unterminated',
        "// -----// IR Dump Before Foo // -----// IR Dump After",
        'nanobind: leaked 3 instances!\n - leaked type "triton._C.libtriton.ir.builder"',
        "\x00\x01 ¿ü € %%% ### !!! @@@ ^^^ {-# external_resources #-}",
        "",
    ]:
        values = [value for _token, value in lexer_for("mlir").get_tokens(text)]
        assert "".join(values).rstrip("\n") == text.rstrip("\n")
        assert all(token not in Error for token, _value in lexer_for("mlir").get_tokens(text))


# -- PTX, LLVM IR and AMDGCN lexers ----------------------------------------------------------------


def test_ptx_lexer_covers_every_corpus_ptx(all_captures: list[Path]) -> None:
    files = _cached(all_captures, {".ptx"})
    assert len(files) >= 90
    lines = distinct_lines(path.read_text(encoding="utf-8") for path in files)
    assert error_report(StrictPTXLexer(), lines) == []


def test_ptx_whole_files_lex_without_errors(corpus: Callable[[str], Path]) -> None:
    for capture in ["sm90_mix", "sm90_gluon"]:
        for path in sorted(corpus(capture).glob("cache/*/*.ptx")):
            text = path.read_text(encoding="utf-8")
            assert not [value for token, value in StrictPTXLexer().get_tokens(text) if token in Error], path


def test_ptx_golden_predicates_and_qualifiers() -> None:
    lexer = PTXLexer()
    # sm90_mix cache/*/add_kernel.ptx
    assert tokens(lexer, "\t@%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];") == [
        (Operator, "@"),
        (Name.Variable, "%p1"),
        (Keyword, "ld"),
        (Keyword.Pseudo, ".global"),
        (Keyword.Pseudo, ".v4"),
        (Keyword.Type, ".b32"),
        (Punctuation, "{"),
        (Name.Variable, "%r1"),
        (Punctuation, ","),
        (Name.Variable, "%r2"),
        (Punctuation, ","),
        (Name.Variable, "%r3"),
        (Punctuation, ","),
        (Name.Variable, "%r4"),
        (Punctuation, "}"),
        (Punctuation, ","),
        (Punctuation, "["),
        (Name.Variable, "%rd1"),
        (Operator, "+"),
        (Number.Integer, "0"),
        (Punctuation, "]"),
        (Punctuation, ";"),
    ]
    # sm90_gluon cache/*/gluon_wgmma_kernel.ptx
    assert tokens(lexer, "\tmbarrier.try_wait.parity.shared::cta.b64 complete, [%r1], %r3;")[:6] == [
        (Keyword, "mbarrier"),
        (Keyword.Pseudo, ".try_wait"),
        (Keyword.Pseudo, ".parity"),
        (Keyword.Pseudo, ".shared::cta"),
        (Keyword.Type, ".b64"),
        (Name, "complete"),
    ]
    copy = tokens(
        lexer,
        "\t@%p3 cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [%r2], [%rd1, {%r3, %r3}],"
        " [%r1];",
    )
    assert (Keyword.Pseudo, ".mbarrier::complete_tx::bytes") in copy
    # the negated predicate, as the PTX ISA writes it (the corpus has it only inside inline asm)
    assert tokens(lexer, "\t@!%p2 bra.uni \t$L__BB0_2;") == [
        (Operator, "@!"),
        (Name.Variable, "%p2"),
        (Keyword, "bra"),
        (Keyword.Pseudo, ".uni"),
        (Name.Label, "$L__BB0_2"),
        (Punctuation, ";"),
    ]


def test_ptx_golden_debug_directives_are_hideable() -> None:
    lexer = PTXLexer()
    # gpu_autotune cache/*/*.ptx
    assert tokens(
        lexer, "\t.loc\t2 216 16, function_name $L__info_string0, inlined_at 1 32 31 // standard.py:216:16"
    ) == [
        (Comment.Special, ".loc\t2 216 16, function_name $L__info_string0, inlined_at 1 32 31"),
        (Comment.Single, "// standard.py:216:16"),
    ]
    assert tokens(lexer, '\t.file\t1 "/tmp/wl/gpu_autotune/src/workloads.py"') == [
        (Comment.Special, '.file\t1 "/tmp/wl/gpu_autotune/src/workloads.py"'),
    ]
    assert tokens(lexer, "$L__func_begin0:") == [(Name.Label, "$L__func_begin0"), (Punctuation, ":")]
    assert tokens(lexer, ".visible .entry matmul_kernel(") == [
        (Keyword.Reserved, ".visible"),
        (Keyword.Reserved, ".entry"),
        (Name.Function, "matmul_kernel"),
        (Punctuation, "("),
    ]
    assert (Number.Float, "0f00000000") in tokens(lexer, "\tmov.b32 \t%r350, 0f00000000;")


def test_llvm_ir_lexer_covers_cached_llir_and_llvm_dumps(
    all_captures: list[Path], corpus: Callable[[str], Path]
) -> None:
    texts = [path.read_text(encoding="utf-8") for path in _cached(all_captures, {".llir"})]
    bodies = llvm_ir_bodies(corpus("sm90_llvm") / "dump.log")
    assert len(bodies) > 100
    lines = distinct_lines(texts + bodies)
    # the pass manager's chatter between dumps (`Running pass: X on [module]`) is not LLVM IR
    ir_lines = [line for line in lines if not _PASS_MANAGER_CHATTER.match(line)]
    assert len(lines) - len(ir_lines) > 10
    assert error_report(StrictTritonLlvmLexer(), ir_lines) == []
    assert error_report(lexer_for("llir"), lines) == []


_PASS_MANAGER_CHATTER = re.compile(r"(?:Running pass|Running analysis|Invalidating analysis): ")


def test_amdgcn_lexer_covers_cached_amdgcn(all_captures: list[Path]) -> None:
    files = _cached(all_captures, {".amdgcn"})
    assert len(files) >= 9
    lines = distinct_lines(path.read_text(encoding="utf-8") for path in files)
    assert error_report(StrictAmdgcnLexer(), lines) == []
    loc = tokens(lexer_for("amdgcn"), "\t.loc\t1 222 0                         ; kernels.py:222:0")
    assert loc[0] == (Comment.Special, ".loc\t1 222 0")


def test_lexer_for_shares_one_instance_per_kind() -> None:
    assert {
        "mlir",
        "ttir",
        "ttgir",
        "source",
        "glir",
        "llir",
        "llvm",
        "ptx",
        "amdgcn",
        "json",
        "text",
    } <= KINDS
    assert lexer_for("ttgir") is lexer_for("ttgir")
    assert lexer_for(".TTGIR") is lexer_for("ttgir")
    assert isinstance(lexer_for("glir"), MLIRLexer)
    assert isinstance(lexer_for("ptx"), PTXLexer)
    assert isinstance(lexer_for("llir"), TritonLlvmLexer)
    assert isinstance(lexer_for("amdgcn"), AmdgcnLexer)
    assert lexer_for("json").name == "JSON"
    assert lexer_for("no-such-kind") is lexer_for("text")
    # leading blank lines are kept, so token lines are the text's lines
    assert "".join(value for _token, value in lexer_for("mlir").get_tokens("\n\nmodule {\n}\n")).startswith(
        "\n\n"
    )


def test_mlir_lexer_is_registered_with_pygments() -> None:
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename

    try:
        lexer = get_lexer_by_name("mlir")
    except Exception:  # noqa: BLE001 - the entry point needs `pip install -e .`
        pytest.skip("the pygments.lexers entry point is not installed")
    assert isinstance(lexer, MLIRLexer)
    assert isinstance(get_lexer_for_filename("k.ttgir"), MLIRLexer)


# -- layouts ---------------------------------------------------------------------------------------


def _fields(layout: Layout) -> dict[str, str]:
    return {field.name: field.explanation for field in layout.fields}


def test_layouts_of_sm90_matmul(corpus: Callable[[str], Path]) -> None:
    path = _one(corpus("sm90_mix"), "cache/*/matmul_kernel.ttgir")
    text = path.read_text()
    layouts = find_layouts(text)
    assert set(layouts) == {"blocked", "blocked1", "mma", "shared", "smem"}
    lines = text.splitlines()
    for alias, layout in layouts.items():
        assert lines[layout.line - 1].startswith(f"#{alias} = {layout.definition}")
    assert layouts["blocked"].line == 1  # the definition that starts the text, found without a newline
    shifted = find_layouts("// a comment\n\n" + text)
    assert {alias: layout.line for alias, layout in shifted.items()} == {
        alias: layout.line + 2 for alias, layout in layouts.items()
    }

    blocked = layouts["blocked"]
    assert blocked.kind == "blocked"
    assert blocked.definition == (
        "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [8, 1], order = [1, 0]}>"
    )
    explained = _fields(blocked)
    assert (
        explained["sizePerThread"] == "each thread holds 8 consecutive elements along dim 1 (1 along dim 0)"
    )
    assert (
        explained["threadsPerWarp"] == "a warp's 32 threads are arranged 2×16 (2 along dim 0, 16 along dim 1)"
    )
    assert explained["warpsPerCTA"] == "the CTA's 8 warps are arranged 8×1 (8 along dim 0, 1 along dim 1)"
    assert explained["order"] == "dim 1 is fastest-varying, then dim 0"
    assert blocked.summary.startswith("blocked: 8 warps × 32 threads cover a 16×128 tile per repetition")

    mma = layouts["mma"]
    assert mma.kind == "nvidia_mma"
    assert "Hopper wgmma" in _fields(mma)["versionMajor"]
    assert "M×N = 16×128 tile with K = 16" in _fields(mma)["instrShape"]
    assert "covers 128×128" in mma.summary

    shared = _fields(layouts["shared"])
    assert shared["swizzlingByteWidth"].startswith("128-byte swizzle")
    assert "row-major" in shared["transposed"]
    assert shared["elementBitWidth"] == "16-bit elements, so one 128-byte swizzle row holds 64 elements"
    assert layouts["smem"].kind == "shared_memory"


def test_layouts_of_sm90_descriptor_matmul_shared(corpus: Callable[[str], Path]) -> None:
    layouts = find_layouts(_one(corpus("sm90_mix"), "cache/*/matmul_descriptor_kernel.ttgir").read_text())
    assert "column-major" in _fields(layouts["shared2"])["transposed"]
    swizzled = layouts["shared1"]
    assert swizzled.kind == "swizzled_shared"
    assert _fields(swizzled)["maxPhase"] == "1 phase: no swizzling"
    assert swizzled.summary == "swizzled_shared: unswizzled shared memory, dim 0 contiguous"


def test_layouts_of_gfx942_attention(corpus: Callable[[str], Path]) -> None:
    layouts = find_layouts(_one(corpus("gfx942_mix"), "cache/*/attention_fwd_kernel.ttgir").read_text())
    mfma = layouts["mma"]
    assert mfma.definition == (
        "#ttg.amd_mfma<{version = 3, warpsPerCTA = [8, 1], instrShape = [32, 32, 8], isTransposed = true}>"
    )
    explained = _fields(mfma)
    assert "CDNA3 (MI300, gfx942)" in explained["version"]
    assert explained["instrShape"] == "one instruction computes an M×N = 32×32 tile with K = 8"
    assert explained["isTransposed"].startswith("true: the result is computed transposed")
    assert mfma.summary == (
        "amd_mfma: version 3, 8 warps arranged 8×1, instruction tile 32×32×8 (M×N×K), transposed"
    )
    swizzled = _fields(layouts["shared"])
    assert swizzled["vec"] == "4 elements form a contiguous vector that the swizzle never splits"
    assert swizzled["maxPhase"] == "16 different swizzle phases (XOR patterns) before the pattern repeats"
    assert layouts["mma1"].summary.startswith("amd_mfma: version 3, 8 warps arranged 4×2")


def test_layouts_of_gfx1250_tdm(corpus: Callable[[str], Path]) -> None:
    layouts = find_layouts(_one(corpus("gfx1250_tdm"), "cache/*/matmul_descriptor_kernel.ttgir").read_text())
    wmma = layouts["mma"]
    assert wmma.kind == "amd_wmma"
    assert "gfx1250" in _fields(wmma)["version"]
    assert _fields(wmma)["ctaLayout"].startswith("8 warps; warp bit 0 moves to [0, 1], bit 1 moves to [0, 2]")
    padded = layouts["shared1"]
    assert padded.kind == "padded_shared"
    assert _fields(padded)["intervals"].startswith(
        "after every 128 elements, 16 padding elements are inserted"
    )
    assert (
        padded.summary
        == "padded_shared: shared memory with 16 padding elements every 128, for a 128×64 block"
    )
    linear = layouts["linear"]
    assert _fields(linear)["lane"].startswith("32 lanes per warp; lane bit 0 moves to [1, 0]")
    assert "(a broadcast: no new elements)" in _fields(linear)["warp"]
    assert linear.summary == "linear: 64 registers × 32 lanes × 8 warps cover a 128×64 tile"


def test_layouts_of_triton_3_1(corpus: Callable[[str], Path]) -> None:
    layouts = find_layouts(_one(corpus("old_3.1_sm90"), "cache/*/matmul_kernel.ttgir").read_text())
    assert layouts["blocked"].dialect == "triton_gpu"
    assert layouts["blocked"].kind == "blocked"
    assert layouts["blocked"].summary.startswith("blocked: 8 warps × 32 threads cover a 4×64 tile")
    shared = layouts["shared"]
    assert shared.kind == "shared"  # before the swizzled_shared / nvmma_shared split
    assert _fields(shared)["hasLeadingOffset"].startswith("true: an MMAv3")
    assert layouts["mma"].kind == "nvidia_mma"


def test_gluon_encodings(corpus: Callable[[str], Path]) -> None:
    capture = corpus("sm90_gluon")
    source = _one(capture, "cache/*/gluon_coalesced_kernel.source").read_text()
    start = source.index("#gluon.coalesced_encoding")
    encoding = read_encoding(source, start)
    assert encoding == "#gluon.coalesced_encoding"
    assert "gluon-infer-coalesced-encodings" in explain_encoding(encoding).summary
    assert "gluon-resolve-auto-encodings" in explain_encoding("#gluon.auto_encoding").summary
    im2col = find_layouts(_one(capture, "cache/*/gluon_tma_im2col_kernel.ttgir").read_text())
    assert im2col["shared"].summary == (
        "nvmma_shared: 32-byte swizzled shared memory for TMA and wgmma, 32-bit elements (8 per 32-byte row),"
        " row-major"
    )


def test_inline_encodings() -> None:
    aliases = {
        "blocked": explain_encoding(
            "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4],"
            " warpsPerCTA = [4, 1], order = [1, 0]}>"
        )
    }
    line = "tensor<128xf32, #ttg.slice<{dim = 1, parent = #blocked}>> loc(#loc3)"
    sliced = explain_encoding(read_encoding(line, line.index("#ttg")), aliases=aliases)
    assert sliced.kind == "slice"
    assert sliced.definition == "#ttg.slice<{dim = 1, parent = #blocked}>"
    assert _fields(sliced)["dim"].startswith("dim 1 of the parent layout is removed")
    assert "4 warps × 32 threads cover a 32×32 tile" in _fields(sliced)["parent"]

    dot = explain_encoding("#ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>")
    assert _fields(dot)["opIdx"] == "0 = A operand (left-hand side, M×K)"
    assert _fields(dot)["kWidth"] == "each thread holds 2 consecutive elements along K"
    assert explain_encoding("#ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>").summary.startswith(
        "dot_op: the B (right) operand"
    )

    tmem = explain_encoding("#ttng.tensor_memory_encoding<blockM = 128, blockN = 256, colStride = 1>")
    assert _fields(tmem) == {
        "blockM": "each block of tensor memory spans 128 rows (M)",
        "blockN": "each block of tensor memory spans 256 columns (N)",
        "colStride": "1: packed, consecutive elements of a row sit in consecutive columns",
    }
    padded = explain_encoding("#ttg.padded_shared<[32:+4] {order = [1, 0], shape = [16, 64]}>")
    assert _fields(padded)["intervals"].startswith("after every 32 elements, 4 padding elements are inserted")
    mma_v2 = explain_encoding(
        "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>"
    )
    assert "Ampere mma.sync" in _fields(mma_v2)["versionMajor"]


def test_unknown_encodings_never_crash() -> None:
    odd = [
        "#ttg.shared_linear<{offset = [[0, 1], [0, 2], [1, 0]], block = []}, alignment = 16>",
        "#ttg.partitioned_shared<{numPartitions = 2, numGroups = 4, partitionDim = 0, partitionLayout = #shared}>",
        "#ttg.future_layout<{newField = [1, 2], other = #ttg.blocked<{x = 1}>}>",
        "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [oops], order = }>",
        "#ttg.blocked<{sizePerThread = [1, 8]",
        "#ttg.nvidia_mma<{versionMajor = 9, instrShape = []}>",
        "#blocked",
        "not an encoding",
        "",
    ]
    for definition in odd:
        layout = explain_encoding(definition)
        assert layout.summary
        assert all(field.explanation for field in layout.fields)
    future = _fields(explain_encoding(odd[2]))
    assert future["newField"] == "newField is [1, 2] (no explanation for this field yet)"


# -- hardware-op groups ----------------------------------------------------------------------------


def test_groups_have_a_legend() -> None:
    assert [group.key for group in GROUPS] == [
        "descriptor",
        "tma",
        "tdm",
        "mma",
        "barrier",
        "async",
        "tmem",
        "warpspec",
        "shared",
        "layout",
        "copy",
    ]
    for group in GROUPS:
        assert group.label and group.description and group.css_class.startswith("hw-")
    assert GROUPS_BY_KEY["layout"].label == "Layout conversion"


def test_tma_ops_in_sm90_descriptor_matmul(corpus: Callable[[str], Path]) -> None:
    text = _one(corpus("sm90_mix"), "cache/*/matmul_descriptor_kernel.ttgir").read_text()
    counts = count_groups(text)
    # 3 descriptors × (tensormap_create, fenceproxy_acquire, reinterpret) + 7 TMA loads + 1 store
    # + 1 store_wait, counted independently with grep
    expected_tma = sum(
        len(re.findall(rf"^\s*(?:%\S+ = )?ttng\.{name}\b", text, re.MULTILINE))
        for name in [
            "tensormap_create",
            "tensormap_fenceproxy_acquire",
            "reinterpret_tensor_descriptor",
            "async_tma_copy_global_to_local",
            "async_tma_copy_local_to_global",
            "async_tma_store_wait",
        ]
    )
    assert counts["tma"] == expected_tma == 17
    assert counts["mma"] == 3  # warp_group_dot, warp_group_dot_wait inside the loop, and the final wait
    assert counts["barrier"] == 11
    assert counts["tdm"] == counts["tmem"] == counts["warpspec"] == 0


def test_tdm_ops_in_gfx1250(corpus: Callable[[str], Path]) -> None:
    capture = corpus("gfx1250_tdm")
    for path in sorted(capture.glob("cache/*/*.ttgir")):
        assert count_groups(path.read_text())["tdm"] > 0, path
    dump = (capture / "dump.log").read_text()
    counts = count_groups(dump)
    assert counts["tdm"] > 500
    # tt.make_tensor_descriptor / tt.descriptor_load before the TDM lowering: TDM on gfx1250, not TMA
    assert counts["tma"] == 0
    # gfx1250_tdm dump.log
    line = "    %a_14 = amdg.async_tdm_intrinsic_wait %a_8, %b_12 {count = 0 : i32, ttg.num_tdm_ops = 0 : i32} loc(#loc33)"
    assert classify_line(line) == ["tdm"]


def test_classify_real_lines() -> None:
    examples = {
        # sm90_mix matmul_descriptor_kernel.ttgir
        "    ttng.init_barrier %acc_7, 1 : !ttg.memdesc<1xi64, #shared1, #smem, mutable> loc(#loc31)": [
            "barrier"
        ],
        "    %a = ttg.local_alloc : () -> !ttg.memdesc<3x128x64xf16, #shared, #smem, mutable> loc(#loc29)": [
            "shared"
        ],
        "    %a_desc_2 = ttng.reinterpret_tensor_descriptor %a_desc_0 : !tt.ptr<i8> to !tt.tensordesc<128x64xf16,"
        " #shared> loc(#loc22)": ["tma"],
        # old_3.1_sm90 dump.log
        "      triton_nvidia_gpu.fence_async_shared {bCluster = false} loc(#loc24)": ["barrier"],
        "      %47 = triton_gpu.local_alloc %46 : (tensor<128x64xf16, #blocked>) -> !tt.memdesc<128x64xf16,"
        " #shared> loc(#loc22)": ["shared"],
        # gfx942_mix dump.log, LLVM dialect
        "    %accumulator_4508 = rocdl.mfma.f32.32x32x8f16 %accumulator_4260, %accumulator_3812,"
        " %accumulator_4507, 0, 0, none : (vector<4xf16>, vector<4xf16>, vector<16xf32>) -> vector<16xf32>"
        " loc(#loc88)": ["mma"],
        # sm90_mix dump.log
        "    %x_6 = ttg.convert_layout %x_5 : tensor<1024x!tt.ptr<f32>, #blocked> -> tensor<1024x!tt.ptr<f32>,"
        " #blocked1> loc(#loc21)": ["layout"],
        # sm90_mix cache/*/matmul_descriptor_kernel.ttir
        "      %a = tt.descriptor_load %a_desc_0[%offs_m, %k] : !tt.tensordesc<128x64xf16> -> tensor<128x64xf16>"
        " loc(#loc33)": ["tma"],
        # sm90_mix cache/*/add_kernel.ttgir
        "    %2 = arith.addf %x_5, %y_7 : tensor<1024xf32, #blocked> loc(#loc11)": [],
    }
    for line, keys in examples.items():
        assert classify_line(line, "cuda:90") == keys, line


def test_classify_looks_at_ops_not_attributes() -> None:
    # made-up lines for what the corpus lacks (warp specialization, tensor memory, old spellings)
    # a descriptor-typed argument marks the line TMA, but is not an op: count_groups ignores it
    signature = "  tt.func public @k(%d: !tt.tensordesc<128x64xf16, #shared>) {"
    assert classify_line(signature) == ["descriptor"]
    assert classify_line(signature, "cuda:90") == ["tma"]
    assert count_groups(signature)["descriptor"] == count_groups(signature)["tma"] == 0
    assert classify_line("    scf.for %i = %c0 to %n step %c1 {  } {ttg.warp_specialize.tag = 0 : i32}") == []
    assert classify_line("      ttg.local_barrier loc(#loc3)") == ["barrier"]
    assert classify_line("    %r = tt.dot_scaled %a scale %s, %b scale %t, %c lhs = e4m3 rhs = e4m3") == [
        "mma"
    ]
    assert classify_line(
        "    %t = ttng.tmem_alloc : () -> !ttg.memdesc<128x128xf32, #tmem, #ttng.tensor_memory>"
    ) == ["tmem"]
    assert classify_line(
        "    %w:2 = ttg.warp_specialize(%a, %b) attributes {requestedRegisters = array<i32: 24>}"
    ) == ["warpspec"]
    assert classify_line("      ttg.warp_return") == ["warpspec"]
    assert classify_line("    ttg.async_wait {num = 0 : i32}") == ["async"]
    assert classify_line("    %b = amdgpu.buffer_load_to_local %p, %m") == ["async"]
    assert classify_line(
        "    %x = tt.experimental_descriptor_load %d[%i] : !tt.ptr<i8> -> tensor<64xf16>", "cuda:90"
    ) == ["tma"]


def test_count_groups_is_fast(corpus: Callable[[str], Path]) -> None:
    body = max(mlir_bodies(corpus("sm90_mix") / "dump.log"), key=len)
    text = (body * (10_000 // body.count("\n") + 1))[:2_000_000]
    started = time.perf_counter()
    count_groups(text)
    assert time.perf_counter() - started < 0.25  # a few ms on a 2-core machine
