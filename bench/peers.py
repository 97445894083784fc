"""irlens against tritonparse on the same six kernels (issue 29: irlens ≤ 0.3× tritonparse's time in every run).

Input (`six_kernels()`, made once and cached beside the other bench inputs): the corpus's sm90_mix
kernels (add, softmax, layernorm, matmul, matmul with tensor descriptors, attention, from its
src/kernels.py) compiled for cuda:90 by the Triton 3.9 + tritonparse 0.6 interpreter at
IRLENS_BENCH_TRITON_PYTHON (no GPU needed), by bench/peers_compile.py, with
`tritonparse.structured_logging.init` tracing and MLIR_ENABLE_DUMP=1 in the same process: the
trace and the dump log describe the same six compiles.

Each side runs as a child process (wall, CPU, peak RSS from wait4), alternately, median of the runs:
- tritonparse: `python -m tritonparse parse TRACE --out DIR` (its whole parse, into a fresh folder);
- irlens: `irlens ingest` of the per-pass dump log and the Triton cache, into a fresh SQLite
  database. tritonparse's trace holds no binary, so the like-for-like figure turns SASS off
  (IRLENS_SASS_DISASSEMBLER=off: the cubins are kept by size and hash); irlens's default, which
  disassembles each cubin, is measured too.
Both sides start from bytecode, as an installed package does: the stage compiles irlens's own
modules first (`compileall` into their __pycache__), since a PYTHONDONTWRITEBYTECODE environment
would otherwise make every irlens run compile them from source.
"""

from __future__ import annotations

import compileall
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from bench import inputs
from bench.ingest import IRLENS, ChildResult, fresh_db, run_child
from bench.inputs import CORPUS, REPO

MB = 1e6
KERNELS = 6
VERSION = "1"  # of the input: bump when peers_compile.py changes what it compiles
TARGET_RATIO = 0.3  # issue 29: whole processes, imports included, in every run


class Skipped(Exception):
    """The stage cannot run here (no Triton 3.9 + tritonparse interpreter, no corpus capture)."""


def triton_python() -> str:
    return os.environ.get("IRLENS_BENCH_TRITON_PYTHON", inputs.TRITON_PYTHON)


def _check_peer(python: str) -> str:
    """tritonparse's version at that interpreter, or Skipped saying why not."""
    if not Path(python).exists():
        raise Skipped(f"no Triton interpreter at {python} (set IRLENS_BENCH_TRITON_PYTHON)")
    probe = subprocess.run(
        [python, "-c", "import importlib.metadata as m, triton; print(m.version('tritonparse'), triton.__version__)"],
        check=False, capture_output=True, text=True, timeout=300,
    )
    if probe.returncode != 0:
        raise Skipped(f"{python} has no triton or tritonparse: {probe.stderr.strip().splitlines()[-1:]}")
    return probe.stdout.strip()


def six_kernels(python: str) -> Path:
    """A folder holding trace/ (tritonparse's raw trace), dump.log (the same process's stderr) and
    cache/ (its TRITON_CACHE_DIR), made once per corpus and interpreter."""
    key = hashlib.sha256(f"{VERSION}\0{python}".encode()).hexdigest()[:12]
    where = inputs.cache_dir() / f"peers-{key}"
    if (where / ".done").exists():
        return where
    archive = CORPUS / "sm90_mix.tar.xz"
    if not archive.exists():
        raise Skipped(f"no {archive.name} in the corpus")
    where.mkdir(parents=True, exist_ok=True)
    for name in ("trace", "cache"):
        shutil.rmtree(where / name, ignore_errors=True)
    with tarfile.open(archive) as tar:
        member = tar.extractfile("sm90_mix/src/kernels.py")
        assert member is not None
        (where / "kernels.py").write_bytes(member.read())
    env = {**os.environ, "TRITON_CACHE_DIR": str(where / "cache"), "MLIR_ENABLE_DUMP": "1"}
    with open(where / "dump.log", "wb") as err:
        done = subprocess.run([python, str(REPO / "bench" / "peers_compile.py"), "kernels.py", "trace"],
                              cwd=where, env=env, stdout=subprocess.DEVNULL, stderr=err, timeout=1800, check=False)
    if done.returncode != 0:
        tail = (where / "dump.log").read_bytes()[-2000:].decode("utf-8", "replace")
        raise SystemExit(f"bench: compiling the six kernels failed ({done.returncode}):\n{tail}")
    (where / ".done").touch()
    return where


def _trace_file(where: Path) -> Path:
    traces = sorted((where / "trace").glob("*.ndjson"))
    if len(traces) != 1:
        raise SystemExit(f"bench: expected one raw trace in {where / 'trace'}, found {len(traces)}")
    return traces[0]


def _folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _tritonparse(python: str, trace: Path, out: Path) -> ChildResult:
    result = run_child([python, "-m", "tritonparse", "parse", str(trace), "--out", str(out), "--overwrite"])
    if result.returncode != 0 or not list(out.glob("*_mapped.ndjson*")):
        raise SystemExit(f"bench: tritonparse parse failed ({result.returncode}):\n{result.stderr.decode()[-4000:]}")
    return result


def _irlens(where: Path, db: Path, sass: bool) -> tuple[ChildResult, int]:
    fresh_db(db)
    env = dict(os.environ)
    if not sass:
        env["IRLENS_SASS_DISASSEMBLER"] = "off"
    # the default command, its compaction included (issue 32: the default path)
    result = run_child([IRLENS, "ingest", "--json", "--db", f"sqlite:///{db}", str(where / "dump.log"),
                        str(where / "cache")], env=env)
    if result.returncode != 0:
        raise SystemExit(f"bench: irlens ingest failed ({result.returncode}):\n{result.stderr.decode()[-4000:]}")
    compilations = len(json.loads(result.stdout)["compilations"])
    return result, compilations


def _summary(runs: list[ChildResult]) -> dict:
    return {
        "seconds": statistics.median(r.seconds for r in runs),
        "all_seconds": [r.seconds for r in runs],
        "cpu_seconds": statistics.median(r.cpu_seconds for r in runs),
        "all_cpu_seconds": [r.cpu_seconds for r in runs],
        "max_rss": int(statistics.median(r.max_rss for r in runs)),
    }


def bench_peers(workdir: Path, repeats: int = 5) -> dict:
    """tritonparse's parse of the trace and irlens's ingest of the dump log + cache, alternately."""
    python = triton_python()
    try:
        versions = _check_peer(python)
        where = six_kernels(python)
    except Skipped as why:
        return {"skipped": str(why)}
    trace = _trace_file(where)
    compileall.compile_dir(str(REPO / "app"), quiet=1)
    compileall.compile_dir(str(REPO / "parsers"), quiet=1)
    out = Path(tempfile.mkdtemp(prefix="tritonparse-", dir=workdir))
    db = workdir / "peers.db"
    # one untimed round of each: page cache, and the first run's own one-off costs
    _tritonparse(python, trace, out)
    _irlens(where, db, sass=False)
    peer, plain, with_sass = [], [], []
    compilations = 0
    for _ in range(repeats):
        peer.append(_tritonparse(python, trace, out))
        result, compilations = _irlens(where, db, sass=False)
        plain.append(result)
        with_sass.append(_irlens(where, db, sass=True)[0])
    fresh_db(db)
    tritonparse, irlens, irlens_sass = _summary(peer), _summary(plain), _summary(with_sass)
    return {
        "versions": versions,
        "kernels": KERNELS,
        "compilations": compilations,
        "trace_bytes": trace.stat().st_size,
        "log_bytes": (where / "dump.log").stat().st_size,
        "cache_bytes": _folder_bytes(where / "cache"),
        "repeats": repeats,
        "tritonparse": tritonparse,
        "irlens": irlens,
        "irlens_sass": irlens_sass,
        "ratio": irlens["seconds"] / tritonparse["seconds"],
        "ratio_cpu": irlens["cpu_seconds"] / tritonparse["cpu_seconds"],
        "ratio_sass": irlens_sass["seconds"] / tritonparse["seconds"],
    }


def _fmt(entry: dict) -> str:
    return f"{entry['seconds']:.2f} s wall, {entry['cpu_seconds']:.2f} s CPU, {entry['max_rss'] / 2**20:.0f} MiB"


def table_rows(peers: dict | None) -> list[tuple[str, str, str, str]]:
    """(figure, value, ratio, target) rows for the bench's summary table."""
    if not peers:
        return []
    if "skipped" in peers:
        return [("irlens vs tritonparse, six kernels", f"skipped: {peers['skipped']}", "", "")]
    shape = f"{peers['kernels']} kernels, cuda:90, tritonparse {peers['versions'].split()[0]}"
    baseline = (f"tritonparse parse, raw trace ({peers['trace_bytes'] / MB:.1f} MB; {shape}), "
                f"median of {peers['repeats']}")
    irlens = (f"irlens ingest, per-pass dump log + cache ({peers['log_bytes'] / MB:.1f} + "
              f"{peers['cache_bytes'] / MB:.1f} MB, {peers['compilations']} compilations), SASS off")
    return [
        (baseline, _fmt(peers["tritonparse"]), "1× (baseline)", ""),
        (irlens, _fmt(peers["irlens"]), f"{peers['ratio']:.2f}× tritonparse (CPU {peers['ratio_cpu']:.2f}×)",
         f"≤ {TARGET_RATIO}× tritonparse"),
        ("  same, with each cubin's SASS (irlens's default)", _fmt(peers["irlens_sass"]),
         f"{peers['ratio_sass']:.2f}× tritonparse", ""),
    ]


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="irlens-bench-peers-"))
    try:
        print(json.dumps(bench_peers(workdir, repeats=args.repeats), indent=1))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
