"""Property tests of the log scanner and the grouping on real logs, mutated (hypothesis).

CI runs the `ci` profile (fixed seed, few examples); `python -m bench.fuzz` runs the same properties
with the `fuzz` profile (random seed, many examples). The mutations are those of real captures:
a killed process (truncation), concurrent compiles (line and character interleaving, banners split
or glued), Windows line endings, binary junk (NUL bytes, bytes that are not UTF-8).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests import fuzz_support as fz

# `ci`: a fixed seed and few examples (the whole file runs in seconds). `fuzz`: a random seed and many
# examples, for `python -m bench.fuzz`, which picks it through IRLENS_FUZZ_PROFILE before importing.
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile(
    "ci", derandomize=True, max_examples=100, deadline=None, database=None, print_blob=True,
    suppress_health_check=_QUIET,
)
settings.register_profile(
    "fuzz", max_examples=int(os.environ.get("IRLENS_FUZZ_EXAMPLES", "500")), deadline=None, database=None,
    print_blob=True, suppress_health_check=_QUIET,
)
settings.load_profile(os.environ.get("IRLENS_FUZZ_PROFILE", "ci"))

CHUNKS = st.sampled_from([1 << 20, 4096, 257])
MB = 1 << 20
# The windows of the regression examples below: each @example is a minimal case hypothesis found
# that the scanner got wrong before the fix it names (kept so CI runs them whatever the seed).
ADD = "sm90_add_kernel_dump.log.gz"
LLVM = "llvm_banners_sm90_triton39.log.gz"
W = fz.Window


def original(window: fz.Window) -> tuple[bytes, list]:
    data = window.data
    found = fz.dumps(fz.scan(data))
    assert found and not any(dump.damage for dump in found), "the fixtures' dumps are all intact"
    return data, found


@example(W(ADD, 0, 1), 0.0625, MB)  # cut among the #loc aliases before the module: was intact
@example(W(LLVM, 16, 3), 0.666015625, MB)  # cut inside the banner after an LLVM dump: was swallowed
@given(fz.windows(), st.floats(0, 1), CHUNKS)
def test_truncated_log_keeps_exactly_the_dumps_it_holds_whole(window, where, chunk_size):
    fz.count()
    data, whole = original(window)
    cut = int(len(data) * where)
    records = fz.check_scan(data[:cut], chunk_size)
    # A dump is whole when its body and the newline ending it are all before the cut; an LLVM dump,
    # which only the next banner ends, when the cut leaves enough of that banner to know it as one
    # (3 bytes: "; *" and "# *" start no LLVM IR line, "; " and "# " do).
    spans = fz.dump_spans(data)
    expected = [
        fz.key(dump) + (dump.line,)
        for dump, (start, end) in zip(whole, spans)
        if data.index(b"\n", start) + 1 + len(dump.body) + 1 <= cut
        and (dump.header.kind != "llvm" or end == len(data) or cut >= end + 3)
    ]
    assert [fz.key(dump) + (dump.line,) for dump in fz.intact(records)] == expected
    assert len(fz.dumps(records)) - len(expected) <= 1  # only the dump the cut falls in is damaged


@example(W("inductor_tail_warning_h200_triton36.log.gz", 0, 1), MB)  # CRLF blank line unseen: the
# dump ran on over the Python warning after it, and was intact
@given(fz.windows(), CHUNKS)
def test_crlf_log_gives_the_same_dumps(window, chunk_size):
    fz.count()
    data, whole = original(window)
    records = fz.check_scan(data.replace(b"\n", b"\r\n"), chunk_size)
    found = fz.dumps(records)
    assert [(d.header.raw, d.body.replace(b"\r\n", b"\n"), d.line, d.damage) for d in found] == [
        (d.header.raw, d.body, d.line, None) for d in whole
    ]


@example(W(ADD, 0, 1), [(0.03125, b"\x00")], MB)  # NUL in a #loc line: was intact
@example(W(LLVM, 0, 5), [(1.0, b"\x00")], MB)  # NUL at the end of an LLVM dump
@example(W(LLVM, 5, 5), [(0.8454100225514434, b"\x00")], MB)  # NUL in the banner after an LLVM dump
@given(fz.windows(), st.lists(st.tuples(st.floats(0, 1), fz.FOREIGN_BYTES), min_size=1, max_size=4), CHUNKS)
def test_nul_and_non_utf8_bytes_damage_only_the_dumps_they_land_in(window, insertions, chunk_size):
    fz.count()
    data, whole = original(window)
    positions = sorted((int(len(data) * where), junk) for where, junk in insertions)
    mutated, at = [], 0
    for position, junk in positions:
        mutated += [data[at:position], junk]
        at = position
    mutated.append(data[at:])
    records = fz.check_scan(b"".join(mutated), chunk_size)
    found = {fz.key(dump) + (dump.line,) for dump in fz.intact(records)}
    originals = {fz.key(dump) + (dump.line,) for dump in whole}
    assert found <= originals  # an IR printer never writes these bytes: a dump holding them is damaged
    for dump, (start, end) in zip(whole, fz.dump_spans(data)):
        # An LLVM dump runs to the next banner, so bytes that break that banner's line (or come just
        # before it) make it run on: the dump cannot be known whole, and is damaged.
        if dump.header.kind == "llvm":
            end = data.index(b"\n", end) + 1 if end < len(data) else end + 1
        if not any(start <= position < end for position, _ in positions):
            assert fz.key(dump) + (dump.line,) in found


@example(W(ADD, 0, 1), 0, 0.0, b"\n", MB)  # "/" + newline + "/ -----// IR Dump ...": no message at all
@example(W(LLVM, 11, 1), 0, 0.09375, b"\n", MB)  # "; *** IR" + " Dump After ...": no message
@example(W(ADD, 28, 5), 14, 1.0, b"\n", MB)  # internal banner cut before its last letter: the
# step "LowerLoop" and a body starting "s" were intact
@example(W(LLVM, 1, 5), 134, 0.0, b"\n", MB)  # the LLVM dump before a split banner ran into the next
@given(fz.windows(), st.integers(0, 10**6), st.floats(0, 1), st.sampled_from([b"\n", b"\r\n", b"\n\n"]), CHUNKS)
def test_banner_split_across_lines_loses_no_other_dump(window, which, where, newline, chunk_size):
    fz.count()
    data, whole = original(window)
    spans = fz.dump_spans(data)
    target = which % len(spans)
    start = spans[target][0]
    eol = data.index(b"\n", start)
    split = start + 1 + int((eol - start - 2) * where)  # strictly inside the banner line
    records = fz.check_scan(data[:split] + newline + data[split:], chunk_size)
    shift = newline.count(b"\n")
    # An LLVM dump ends only at the next banner: when that one is broken, the LLVM dump before it
    # cannot be known whole, and is damaged (never intact with the broken banner's lines in it).
    lost = {target, target - 1} if target and whole[target - 1].header.kind == "llvm" else {target}
    expected = {fz.key(d) + (d.line + (shift if i > target else 0),) for i, d in enumerate(whole) if i not in lost}
    found = {fz.key(dump) + (dump.line,) for dump in fz.intact(records)}
    assert expected <= found
    # The dumps about the split are damaged, or intact and exactly as logged.
    assert found - expected <= {fz.key(whole[i]) + (whole[i].line + (shift if i > target else 0),) for i in lost}
    # The broken banner is reported: as a banner irlens cannot parse, or as a damaged dump.
    assert any(isinstance(r, fz.UnknownBanner) for r in records) or any(d.damage for d in fz.dumps(records))


@example(W(LLVM, 4, 1), 0, 0, MB)  # two LLVM banners on one line: was intact
@given(fz.windows(), st.integers(0, 10**6), st.integers(0, 10**6), CHUNKS)
def test_two_banners_on_one_line_damage_one_dump_and_keep_its_text(window, which, other, chunk_size):
    fz.count()
    data, whole = original(window)
    spans = fz.dump_spans(data)
    target, glued = which % len(spans), other % len(spans)
    eol = data.index(b"\n", spans[target][0])
    banner = data[spans[glued][0] : data.index(b"\n", spans[glued][0])]
    records = fz.check_scan(data[:eol] + banner + data[eol:], chunk_size)
    found = [fz.key(dump) + (dump.line,) for dump in fz.intact(records)]
    assert found == [fz.key(d) + (d.line,) for i, d in enumerate(whole) if i != target]
    assert any(dump.damage and dump.body == whole[target].body for dump in fz.dumps(records))


# Soundness under interleaving. "Every intact dump comes from one of the two logs" is not a property
# any parser can have: a line-level mix can put into dump B one brace-free line of the concurrent
# dump A at the right depth (`tt.store %x, %y` of the same kernel), while the rest of A (now
# missing that line) still closes as a whole module; no thread prefix tells them apart, and every
# check that a cut or a mix breaks (body_damage in parsers/logs/dump_damage.py) still holds. What holds and is
# asserted: a dump made of one log's bytes only is exactly one of that log's dumps (no swapped
# bodies, no dump run into another), no more dumps than the two logs hold, and every dump that the
# mix left whole is found intact. bench/fuzz.py counts the mixed intact dumps it meets.
MIXED_INTACT = [0]


def check_interleave(mixed, owners, wholes, datas):
    records = fz.check_scan(mixed, 1 << 20)
    originals = {fz.key(dump) for whole in wholes for dump in whole}
    assert len(fz.dumps(records)) <= sum(len(whole) for whole in wholes)
    found = [fz.key(dump) for dump in fz.intact(records)]
    for dump in fz.intact(records):
        if fz.single_source(mixed, owners, dump):
            assert fz.key(dump) in originals
        elif fz.key(dump) not in originals:
            MIXED_INTACT[0] += 1
    for data, whole in zip(datas, wholes):
        for dump, (start, end) in zip(whole, fz.dump_spans(data)):
            if fz.kept_whole(mixed, data, start, end, dump.header.kind == "llvm"):
                assert fz.key(dump) in found
    return records


@example(W(ADD, 0, 1), W(LLVM, 0, 1), [1, 1])  # two banners in a row: the second took the first's body
@example(W(LLVM, 0, 5), W(ADD, 0, 1), [1, 1])  # an LLVM dump ran on over the other log's MLIR dump
@example(W(ADD, 0, 1), W(LLVM, 18, 2), [2, 47])  # an LLVM banner inside an MLIR dump did not end it
@given(fz.windows(), fz.windows(), st.lists(st.integers(1, 60), max_size=30))
def test_logs_interleaved_line_by_line(window_a, window_b, runs):
    fz.count()
    data_a, whole_a = original(window_a)
    data_b, whole_b = original(window_b)
    mixed, owners = fz.interleave(fz.split_lines(data_a), fz.split_lines(data_b), runs)
    check_interleave(mixed, owners, (whole_a, whole_b), (data_a, data_b))


@example(W(ADD, 29, 1), W(ADD, 0, 2), [13, 1, 1, 25], [13, 1])  # "two banners in a row" outlived an
# unparseable banner between them and damaged a later, whole dump
@example(W(ADD, 0, 1), W(LLVM, 4, 1), [1], [1, 1, 1, 1])  # "; *** ... on [module] ***" lost its "; ": a
# legacy-style banner of the same dump, intact
@given(
    fz.windows(max_dumps=3), fz.windows(max_dumps=3), st.lists(st.integers(1, 400), min_size=1, max_size=8),
    st.lists(st.integers(1, 40), max_size=40),
)
def test_logs_interleaved_character_by_character(window_a, window_b, sizes, runs):
    fz.count()
    data_a, whole_a = original(window_a)
    data_b, whole_b = original(window_b)
    mixed, owners = fz.interleave(fz.split_chars(data_a, sizes), fz.split_chars(data_b, sizes[::-1]), runs)
    check_interleave(mixed, owners, (whole_a, whole_b), (data_a, data_b))


@example(W(LLVM, 4, 1), W(ADD, 0, 1), 116)  # an LLVM module cut before its metadata: was intact
@example(W(LLVM, 11, 3), W(ADD, 0, 1), 274)  # the same, legacy style (no "; ModuleID" line)
@example(W(LLVM, 18, 1), W(LLVM, 17, 2), 2)  # two machine-code dumps run together: was intact
@example(W(LLVM, 4, 1), W(LLVM, 8, 2), 1)  # a module dump run into a function dump: was intact
@example(W("inductor_tail_warning_h200_triton36.log.gz", 0, 1), W(ADD, 0, 1), 3016)  # cut among the
# trailing #loc aliases, the missing ones used only by other missing ones: was intact
@example(W(LLVM, 11, 2), W(LLVM, 8, 2), 80)  # a module's metadata ran into a function dump: was intact
@example(W(LLVM, 9, 1), W(LLVM, 3, 2), 1)  # an LLVM function dump run into another: was intact
@example(W(LLVM, 18, 1), W(LLVM, 8, 2), 1)  # machine code run into an LLVM IR dump: was intact
@given(fz.windows(), fz.windows(max_dumps=2), st.integers(0, 10**6))
def test_a_whole_dump_written_into_another_logs_line_is_kept_and_nothing_is_swapped(window_a, window_b, where):
    # A writer that prints a dump in one write (buffered output) in the middle of another's dump.
    fz.count()
    data_a, whole_a = original(window_a)
    data_b, whole_b = original(window_b)
    lines = fz.split_lines(data_a)
    at = where % (len(lines) + 1)
    mixed, owners = fz.interleave(lines, [data_b], [at, 1])
    records = check_interleave(mixed, owners, (whole_a, whole_b), (data_a, data_b))
    # Here every intact dump is one of the logs' own: the mixed-in dump brings its blank line.
    assert {fz.key(dump) for dump in fz.intact(records)} <= {fz.key(d) for d in whole_a + whole_b}


@given(st.data(), CHUNKS)
def test_any_mutation_never_raises_and_chunking_changes_nothing(data, chunk_size):
    fz.count()
    window = data.draw(fz.windows(max_dumps=3))
    text = bytearray(window.data)
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(text)))
        edit = data.draw(st.sampled_from(["insert", "delete", "replace"]))
        junk = data.draw(st.one_of(st.binary(max_size=20), st.sampled_from(fz.INTERESTING)))
        if edit == "insert":
            text[at:at] = junk
        elif edit == "delete":
            del text[at : at + len(junk) + 1]
        else:
            text[at : at + len(junk)] = junk
    mutated = bytes(text)
    records = fz.check_scan(mutated, chunk_size)
    assert fz.normalised(records) == fz.normalised(fz.scan(mutated))


def test_a_banner_ending_a_chunk_then_a_blank_line_is_an_empty_dump_as_in_one_chunk():
    # Found by the chunking property: the blank line after a banner that ended a chunk was not seen,
    # so the next dump's lines became this one's body.
    data = W(ADD, 0, 2).data
    banner = data[: data.index(b"\n") + 1]
    mutated = banner + b"\n" + data[len(banner) :]
    records = fz.scan(mutated, chunk_size=len(banner))
    assert fz.normalised(records) == fz.normalised(fz.scan(mutated))
    assert fz.dumps(records)[0].damage == "empty dump"


def test_a_crlf_blank_line_inside_a_dump_ends_it_whatever_the_chunking():
    # Found by the chunking property: the fast path (one big chunk) did not see "\r\n" as a blank
    # line and kept it inside an intact dump; the general path (small chunks) ended the dump there.
    data = W(ADD, 38, 2).data
    mutated = data[:393] + b"\r\n" + data[393:]  # among the #loc aliases before the module
    assert fz.normalised(fz.scan(mutated, 257)) == fz.normalised(fz.scan(mutated))
    assert fz.dumps(fz.scan(mutated))[0].damage
