"""Our layout algebra equals Triton 3.9's own ``to_linear_layout`` on every committed fixture.

The fixtures (tests/fixtures/layouts/triton39_layouts.json.gz) were made by
tests/fixtures/layouts/make_layout_fixtures.py under Triton 3.9.0: every (encoding, shape)
pair used by a tensor or memdesc in the corpus, plus a parameter sweep.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from app.layouts import LayoutError, to_linear_layout
from app.layouts.parse import parse_encoding
from app.layouts.shared import padded_parts

FIXTURES = Path(__file__).parent / "fixtures" / "layouts" / "triton39_layouts.json.gz"


def load():
    with gzip.open(FIXTURES, "rt") as f:
        return json.load(f)


def kind_of(fx) -> str:
    try:
        enc = parse_encoding(fx["attr"])
    except LayoutError:
        return "unparsed"
    parent = enc.params.get("parent")
    return enc.kind + (f"/{parent.kind}" if parent is not None and hasattr(parent, "kind") else "")


def check(fx) -> str | None:
    """None when we agree with Triton, else what differs."""
    try:
        enc = parse_encoding(fx["attr"])
    except LayoutError as e:
        return None if "error" in fx else f"we cannot parse it ({e}) but Triton answered"
    if "padded" in fx:
        pairs, ll = padded_parts(enc.params)
        want = fx["padded"]
        got = {"intervals": pairs, "offset": ll.in_bases("offset"), "block": ll.in_bases("block")}
        exp = {k: want[k] for k in ("intervals", "offset", "block")}
        return None if got == exp else f"padded {got} != {exp}"
    try:
        ll = to_linear_layout(enc, fx["shape"])
    except LayoutError as e:
        return None if "error" in fx else f"we refused ({e}) but Triton answered"
    if "error" in fx:
        return f"Triton refused ({fx['error']}) but we answered"
    want = fx["bases"] if "bases" in fx else fx["tmem"]
    got = {k: ll.in_bases(k) for k in want}
    return None if got == want else f"got {got}\n want {want}"


def test_every_fixture_matches_triton():
    doc = load()
    assert doc["triton"] == "3.9.0"
    bad = Counter()
    first = {}
    for fx in doc["fixtures"]:
        if "skip" in fx:
            continue
        diff = check(fx)
        if diff:
            k = kind_of(fx)
            bad[k] += 1
            first.setdefault(k, f"{fx['attr']} {fx['shape']}: {diff}")
    assert not bad, "\n".join(f"{n} x {k}: {first[k]}" for k, n in bad.items())


def test_fixtures_cover_every_kind():
    kinds = Counter(kind_of(fx) for fx in load()["fixtures"] if "error" not in fx)
    for k in ("ttg.blocked", "ttg.slice/ttg.blocked", "ttg.slice/ttg.nvidia_mma", "ttg.linear", "ttg.nvidia_mma",
              "ttg.amd_mfma", "ttg.amd_wmma", "ttg.dot_op/ttg.nvidia_mma", "ttg.dot_op/ttg.amd_mfma",
              "ttg.dot_op/ttg.amd_wmma", "ttg.dot_op/ttg.blocked", "ttg.nvmma_shared", "ttg.swizzled_shared",
              "ttg.padded_shared", "ttg.shared_linear", "ttg.amd_rotating_shared", "ttng.tensor_memory_encoding"):
        assert kinds[k] > 0, k


@pytest.mark.parametrize("needle", ["colStride = 2", "colStride = 4", "twoCTAs = true", "CGALayout = [[0, 1]]",
                                    "fp4Padded = true}>", "blockM = 64, blockN = 128, colStride = 1, fp4Padded",
                                    "elementBitWidth = 8, fp4Padded = true", "amd_rotating_shared"])
def test_fixtures_cover_blackwell_and_rotating_parameters(needle):
    """The parameters drawn since issue 14's first sweep each have fixtures Triton answered, and ones it refused."""
    answered = [fx for fx in load()["fixtures"] if needle in fx["attr"] and "error" not in fx and "skip" not in fx]
    assert len(answered) >= 5, needle


def test_tensor_memory_ctas_become_blocks():
    """Triton's Python view of tensor memory keeps one CTA's rows and columns (the fixtures check those); the
    CTAs of CGALayout follow as ``block``, each CTA's share of the shape apart, and the picture lists them."""
    from app.layouts.mapping import describe

    attr = "#ttng.tensor_memory_encoding<blockM = 128, blockN = 128, colStride = 1, CGALayout = [[1, 0]], twoCTAs = true>"
    ll = to_linear_layout(attr, [256, 128])
    assert ll.in_bases("block") == [[128, 0]]
    cells = describe(attr, [256, 128])["cells"]
    assert cells[0] == [[0, 0, 0]] and cells[128 * 128] == [[0, 0, 1]]
    with pytest.raises(LayoutError, match="at least 128x256"):
        to_linear_layout(attr.replace("[[1, 0]], twoCTAs = true", "[[0, 1]]"), [256, 128])


@pytest.mark.parametrize("text", [("#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], "
                                   "order = [0]}>")])
def test_not_power_of_two_is_refused(text):
    with pytest.raises(LayoutError, match="power of two"):
        to_linear_layout(text, [48])


def test_owners_equal_tritons_tensor_view():
    """Per element, the [thread, register] owners we answer are Triton's own T<thread>:<register>
    printout (format_tensor_view), broadcast copies included."""
    from app.layouts.mapping import describe

    views = [fx for fx in load()["fixtures"] if "tensor_view" in fx]
    assert len(views) > 300
    for fx in views:
        cells = [c for c in re.split(r"[\[\],]", fx["tensor_view"]) if c.strip()]
        want = [sorted([int(t), int(r)] for t, r in re.findall(r"T(\d+):(\d+)", c)) for c in cells]
        got = describe(fx["attr"], fx["shape"])["owners"]
        assert [sorted(o) for o in got] == want, (fx["attr"], fx["shape"])
