"""The compiled multi-pattern scanner (hyperscan, `pip install irlens[fast]`) and the pure path
(`in` and `re`, what runs without the wheel or with IRLENS_PURE_SCAN=1) give the same answers: the
log scanner's records and damage, the banner-piece check, the autotune hints and the op-index terms,
on the fixture logs, on mutated copies of them (the fuzz tests' mutations, drawn with a fixed seed)
and on the corpus's logs. The pure side runs in a child process, where the variable is read at import.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import random
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests import fuzz_support as fz
from tests.conftest import CORPUS, REPO

pytest.importorskip("hyperscan")


def summary(data: bytes) -> list[str]:
    """What the two paths must agree on, per chunk size: a digest of the normalised records, each
    dump's banner-piece check and autotune hints, and each intact body's op-index terms."""
    from app.insight.op_terms import blob_terms
    from parsers.literal_scan import LiteralSet
    from parsers.logs.dump_damage import has_banner_piece
    from parsers.logs.log import scan_log
    from parsers.records import Dump

    hints = LiteralSet((b" ms ", b"AUTOTUNE", b"utotuning"))
    out = []
    for chunk_size in (1 << 20, 4096):
        records = list(scan_log(io.BytesIO(data), chunk_size=chunk_size))
        facts = [
            (has_banner_piece(record.body), hints.any(record.body),
             None if record.damage else sorted(blob_terms(record.body)))
            for record in records if isinstance(record, Dump)
        ]
        out.append(hashlib.sha256(pickle.dumps((fz.normalised(records), facts))).hexdigest())
    return out


def _mutated(data: bytes, rng: random.Random) -> bytes:
    """One of the fuzz tests' mutations, drawn by `rng`."""
    choice = rng.randrange(5)
    if choice == 0:  # a killed writer
        return data[: rng.randrange(len(data) + 1)]
    if choice == 1:  # Windows line ends
        return data.replace(b"\n", b"\r\n")
    if choice == 2:  # two writers interleaved by lines
        lines = fz.split_lines(data)
        half = len(lines) // 2
        mixed = [line for pair in zip(lines[:half], lines[half:]) for line in pair]
        return b"".join(mixed + lines[2 * half:])
    edits = bytearray(data)
    for _ in range(rng.randrange(1, 8)):  # fragments that steer the scanner's decisions, or junk bytes
        piece = rng.choice(fz.INTERESTING) if choice == 3 else rng.choice([b"\x00", b"\xff", b"\xc3"])
        at = rng.randrange(len(edits) + 1)
        edits[at:at] = piece
    return bytes(edits)


def _inputs(tmp_path: Path) -> list[Path]:
    rng = random.Random(29)
    paths = []
    for name in fz.LOG_FIXTURES:
        data = fz.fixture_log(name)
        variants = [data, *(_mutated(data, rng) for _ in range(12))]
        for number, variant in enumerate(variants):
            path = tmp_path / f"{name}.{number}"
            path.write_bytes(variant)
            paths.append(path)
    if (CORPUS / "expected.json").exists():  # every corpus log of up to 24 MB
        expected = json.loads((CORPUS / "expected.json").read_text())
        for name in sorted(expected):
            archive = CORPUS / f"{name}.tar.xz"
            if not archive.exists():
                continue
            with tarfile.open(archive) as tar:
                try:
                    member = tar.getmember(f"{name}/{expected[name]['file']}")
                except KeyError:
                    continue
                if not member.isfile() or not 0 < member.size <= 24 << 20:
                    continue
                path = tmp_path / f"corpus-{name}.log"
                path.write_bytes(tar.extractfile(member).read())
                paths.append(path)
    return paths


def test_literal_sets_agree():
    from parsers.literal_scan import LiteralSet

    literals = (b" ms ", b"AUTOTUNE", b"IR Dump", b"*** I", b"p After", b"a")
    compiled, pure = LiteralSet(literals), LiteralSet(literals, compiled=False)
    if not compiled.compiled:
        pytest.skip("IRLENS_PURE_SCAN is set: no compiled set to compare")
    assert not pure.compiled
    rng = random.Random(7)
    for _ in range(500):
        data = b"".join(rng.choice([*literals, b"x", b"\n", b"IR Dum", b"** I", b"\x00"]) for _ in range(rng.randrange(12)))
        assert compiled.found(data) == pure.found(data) == {i for i, lit in enumerate(literals) if lit in data}


def test_compiled_and_pure_paths_give_the_same_records_and_terms(tmp_path):
    from parsers import literal_scan

    if not literal_scan.COMPILED:
        pytest.skip("IRLENS_PURE_SCAN is set: this process runs the pure path too")
    paths = _inputs(tmp_path)
    assert len(paths) >= 5 * 13
    here = {str(path): summary(path.read_bytes()) for path in paths}
    code = (
        "import json, sys; from pathlib import Path; from tests.test_scan_paths import summary; "
        "from parsers import literal_scan; assert not literal_scan.COMPILED; "
        "print(json.dumps({p: summary(Path(p).read_bytes()) for p in sys.argv[1:]}))"
    )
    env = {**os.environ, "IRLENS_PURE_SCAN": "1", "PYTHONPATH": str(REPO)}
    child = subprocess.run([sys.executable, "-c", code, *here], env=env, cwd=REPO, capture_output=True, check=True)
    there = json.loads(child.stdout)
    differing = [path for path in here if here[path] != there[path]]
    assert not differing, f"the two paths differ on {differing}"
