"""Property tests of the readers of profiles, kernel metadata and autotune files on hostile numbers
and bytes (hypothesis): NaN, ±Infinity, 1e400, integers past 64 bits and Unicode digits, placed in
every number of a real-shaped file, and random bytes under each file's extension. Each reader must
refuse the file with its own error or read it with every number finite and in range, and an ingest
of such files beside a real capture keeps the capture and names each bad file in a warning.

CI runs the `ci` profile of tests/test_fuzz_logs.py (fixed seed); `python -m bench.fuzz` runs these
too, with the `fuzz` profile.
"""

from __future__ import annotations

import gzip
import json
import math
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from app.store.db import Database
from app.store.json_values import dumps
from parsers import json_numbers
from parsers.autotuning.autotune_files import read_triton_autotune
from parsers.caches import cache
from parsers.profiles import ncu, proton
from parsers.profiles.profile_records import ProfileError, leave_out_unusable
from tests import test_fuzz_logs  # noqa: F401 (registers and loads the hypothesis profiles)
from tests.conftest import FIXTURES, ingest_paths

HOSTILE_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1" + "0" * 30, "-" + "9" * 25, "1e-400",
                   "0", "-0.0", "3.5", "7"]
NUMBER = st.one_of(st.sampled_from(HOSTILE_NUMBERS), st.integers(-(2**70), 2**70).map(str),
                   st.floats(allow_nan=False, allow_infinity=False).map(repr))
RANDOM_BYTES = st.binary(min_size=0, max_size=600)


def _hatchet(count: str, time: str, samples: list[str]) -> bytes:
    """A Proton tree with these numbers written as they are (json.dumps would refuse or change them)."""
    lines = ",".join(f'{{"frame": {{"name": "/k.py:{number + 1}@k", "type": "function"}}, '
                     f'"metrics": {{"num_samples": {value}}}, "children": []}}' for number, value in enumerate(samples))
    return ('[{"frame": {"name": "ROOT", "type": "function"}, "metrics": {}, "children": [{"frame": {"name": '
            f'"k", "type": "function"}}, "metrics": {{"count": {count}, "time (ns)": {time}}}, "children": [{lines}]}}]}}, {{}}]'
            ).encode()


def _all_numbers(value) -> list:
    if isinstance(value, dict):
        return [n for item in value.values() for n in _all_numbers(item)]
    if isinstance(value, (list, tuple)):
        return [n for item in value for n in _all_numbers(item)]
    return [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def _profile_is_clean(profile) -> None:
    leave_out_unusable(profile)
    for kernel in profile.kernels:
        numbers = _all_numbers([kernel.totals, kernel.unattributed, list(kernel.lines.values()), kernel.regions,
                                [row.metrics for row in kernel.sass], kernel.launch, kernel.count, kernel.time_ns])
        assert all(json_numbers.usable(n) for n in numbers)
        assert kernel.count is None or 0 <= kernel.count < 2**31
    json.loads(dumps([k.totals for k in profile.kernels]))  # strict JSON, as stored


@given(NUMBER, NUMBER, st.lists(NUMBER, max_size=4))
def test_hatchet_numbers_are_finite_or_left_out_with_a_note(count, time, samples):
    profile = proton.parse_hatchet(_hatchet(count, time, samples))
    _profile_is_clean(profile)
    bad = [text for text in (count, time, *samples) if json_numbers.loads(text)[1]]  # NaN, 1e400, 10**30
    assert not bad or any("not finite or out of range" in note for note in profile.notes), (bad, profile.notes)


@given(st.lists(st.one_of(NUMBER, st.sampled_from(["nan", "inf", "\u2460", "\u00b2", "1,234", "-", ""])),
                min_size=2, max_size=2))
def test_ncu_source_csv_cells_are_finite(cells):
    data = ('"Kernel Name","k",\n"Address","Source","# Samples","Instructions Executed"\n'
            f'"0x7f00","LDC R1, c[0x0][0x28]","{cells[0]}","{cells[1]}"\n').encode()
    _profile_is_clean(ncu.parse_source_csv(data))


@given(st.sampled_from(["num_warps", "shared", "num_stages", "name", "target"]), NUMBER)
def test_metadata_numbers_never_reach_a_column_unusable(field, number):
    text = f'{{"name": "k", "hash": "h", "target": {{"backend": "cuda", "arch": 90}}, "{field}": {number}}}'
    metadata, _ = cache.read_metadata(text.encode())
    assert metadata is not None
    for value in (metadata.num_warps, metadata.num_stages, metadata.shared):
        assert value is None or json_numbers.usable(value)
    json.loads(dumps(metadata.raw))


@given(st.lists(NUMBER, min_size=1, max_size=3))
def test_autotune_file_times_are_finite_or_failed(times):
    text = f'{{"key": [1], "configs_timings": [[{{"kwargs": {{"B": 1}}, "num_warps": 4}}, [{", ".join(times)}]]]}}'
    try:
        entry = read_triton_autotune("k.autotune.json", text)
    except (ValueError, TypeError):
        return  # refused as a whole: the caller names the file in a warning
    json.loads(dumps(entry))
    for choice in entry["choices"]:
        assert choice["time_ms"] is None or math.isfinite(choice["time_ms"])


@given(RANDOM_BYTES)
def test_random_bytes_as_a_hatchet_or_csv_are_refused_or_read(data):
    for parse in (proton.parse_hatchet, ncu.parse_source_csv):
        try:
            _profile_is_clean(parse(data))
        except ProfileError:
            pass


@given(st.sampled_from(["report.ncu-rep", "p.hatchet", "k.cubin", "k.json", "a.autotune.json"]), RANDOM_BYTES)
def test_random_bytes_beside_a_capture_lose_nothing_else(name, data):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "capture"
        root.mkdir()
        (root / "dump.log").write_bytes(gzip.decompress((FIXTURES / "sm90_add_kernel_dump.log.gz").read_bytes()))
        (root / name).write_bytes(data)
        database = Database(f"sqlite:///{folder}/irlens.db")
        try:
            run = ingest_paths(database, [root])
        finally:
            database.dispose()
    assert [c["kernel"] for c in run["compilations"] if c["origin"] == "log"] == ["add_kernel"]
    json.loads(json.dumps(run), parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))


HOSTILE_FILES = {
    "inf.hatchet": _hatchet("1e400", "5", ["3"]),
    "nan.hatchet": _hatchet("3", "NaN", ["-Infinity"]),
    "big.hatchet": _hatchet("1" + "0" * 30, "7", ["2"]),
    "random.hatchet": bytes(range(256)) * 3,
    "report.ncu-rep": bytes(range(255, -1, -1)) * 16,
    "kernel.cubin": bytes(range(256)) * 4,
    "random.json": bytes(range(256)) * 2,
    "stray.json": b'{"name": "not triton", "values": [1, 2]}',
    "matmul_kernel.autotune.json": b'{"key": [1], "configs_timings": [[{"kwargs": {"B": 1}}, [NaN, 1e400]]]}',
    "ncu_nan.csv": b'"Kernel Name","k",\n"Address","Source","# Samples"\n"0x7f00","NOP","1e400"\n',
}


def test_irlens_ingest_of_hostile_files_prints_warnings_not_a_traceback(tmp_path):
    """The command line, as a user runs it: exit 0, no traceback, each bad file named."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    root = tmp_path / "upload"
    root.mkdir()
    (root / "dump.log").write_bytes(gzip.decompress((FIXTURES / "sm90_add_kernel_dump.log.gz").read_bytes()))
    for name, data in HOSTILE_FILES.items():
        (root / name).write_bytes(data)
    env = {**os.environ, "PYTHONPATH": str(REPO), "IRLENS_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-m", "app.cli", "ingest", str(root)], capture_output=True, text=True,
                          env=env, cwd=REPO, stdin=subprocess.DEVNULL, check=False, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "Traceback" not in output, output
    assert "add_kernel" in output
    warned = [line for line in output.splitlines() if line.startswith("warning:")]
    for name in HOSTILE_FILES:
        if name == "matmul_kernel.autotune.json":
            continue  # read whole: its config is failed (no finite time), which is no damage
        assert any(line.endswith(f"upload/{name}") for line in warned), (name, warned)
