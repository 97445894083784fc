"""Benchmark inputs, built from ../shared/corpus and cached in a temp dir while the corpus is unchanged.

The big logs are the corpus's dump files concatenated copy after copy, with every kernel symbol
(`@name`, from expected.json) renamed per copy (`@name_c3`), so no snapshot of one copy is a byte-for-byte
duplicate of another's and deduplication cannot make the benchmark cheap. Logs are written streaming,
block by block; nothing holds a whole log in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("IRLENS_BENCH_CORPUS", REPO.parent / "shared" / "corpus"))  # the archives
GENERATOR_VERSION = "1"
BLOCK = 8 << 20
MiB = 1 << 20
GiB = 1 << 30


def corpus_archives() -> list[Path]:
    archives = sorted(CORPUS.glob("*.tar.xz"))
    if not archives:
        raise SystemExit(f"bench: no corpus archives in {CORPUS}")
    return archives


def corpus_key() -> str:
    """Changes whenever an archive or expected.json changes (name, size, mtime)."""
    digest = hashlib.sha256(GENERATOR_VERSION.encode())
    for path in [*corpus_archives(), CORPUS / "expected.json"]:
        stat = path.stat()
        digest.update(f"{path.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def cache_dir() -> Path:
    root = Path(os.environ.get("IRLENS_BENCH_DIR", Path(tempfile.gettempdir()) / "irlens-bench"))
    path = root / corpus_key()
    path.mkdir(parents=True, exist_ok=True)
    # Inputs of an older corpus are stale: remove them.
    for other in root.iterdir():
        if other.is_dir() and other != path:
            shutil.rmtree(other, ignore_errors=True)
    return path


def raw_input_bytes() -> int:
    """Uncompressed size of every file in every corpus archive: the denominator of the storage figure."""
    return archive_raw_bytes(corpus_archives())


def archive_raw_bytes(archives: list[Path]) -> int:
    """Uncompressed size of every file in these archives."""
    total = 0
    for archive in archives:
        with tarfile.open(archive) as tar:
            total += sum(member.size for member in tar if member.isfile())
    return total


def _extract_logs(where: Path) -> list[tuple[Path, list[str]]]:
    """The dump file of every capture that has one (as expected.json names it), with its kernel names."""
    expected = json.loads((CORPUS / "expected.json").read_text())
    logs_dir = where / "logs"
    done = logs_dir / ".done"
    logs: list[tuple[Path, list[str]]] = []
    for name in sorted(expected):
        kernels = sorted({c["kernel"] for c in expected[name]["compilations"] if c.get("kernel")})
        logs.append((logs_dir / f"{name}.log", kernels))
    if done.exists():
        return [(path, kernels) for path, kernels in logs if path.exists()]
    logs_dir.mkdir(exist_ok=True)
    for name in sorted(expected):
        member_name = f"{name}/{expected[name]['file']}"
        with tarfile.open(CORPUS / f"{name}.tar.xz") as tar:
            try:
                member = tar.getmember(member_name)
            except KeyError:
                continue
            source = tar.extractfile(member)
            if source is None or member.size == 0:
                continue
            with source, open(logs_dir / f"{name}.log", "wb") as out:
                shutil.copyfileobj(source, out, BLOCK)
    done.touch()
    return [(path, kernels) for path, kernels in logs if path.exists()]


def _write_copy(out, path: Path, pattern: re.Pattern | None, suffix: bytes) -> int:
    written = 0
    replacement = rb"@\1" + suffix
    with open(path, "rb") as source:
        carry = b""
        while True:
            block = source.read(BLOCK)
            if not block:
                break
            block = carry + block
            cut = block.rfind(b"\n") + 1
            if cut == 0:
                carry = block
                continue
            carry = block[cut:]
            data = pattern.sub(replacement, block[:cut]) if pattern else block[:cut]
            out.write(data)
            written += len(data)
        if carry:
            data = (pattern.sub(replacement, carry) if pattern else carry) + b"\n"
            out.write(data)
            written += len(data)
    return written


def big_log(size: int) -> Path:
    """A log of at least `size` bytes: corpus logs, copy after copy, kernels renamed per copy."""
    where = cache_dir()
    target = where / f"big-{size // MiB}MiB.log"
    if target.exists():
        return target
    logs = _extract_logs(where)
    patterns = {
        path: re.compile(rb"@(" + b"|".join(re.escape(k.encode()) for k in kernels) + rb")(?![\w$.])")
        if kernels else None
        for path, kernels in logs
    }
    partial = target.with_suffix(".partial")
    written = 0
    copy = 0
    with open(partial, "wb") as out:
        while written < size:
            for path, _ in logs:
                written += _write_copy(out, path, patterns[path], f"_c{copy}".encode())
                if written >= size:
                    break
            copy += 1
    partial.rename(target)
    return target


_BANNER_LINE = re.compile(rb"^// -----// IR Dump")


def damaged_big_log(size: int, every: int = 4) -> Path:
    """big_log(size) with every `every`-th IR dump cut in half, as a log written by threads that
    interleave is cut: each such dump is kept and named in a warning ("cut off by the next dump's
    banner"), so a 1 GB log gives thousands of warnings, as a real max-autotune capture does."""
    source = big_log(size)
    target = source.with_name(source.stem + f"-cut{every}.log")
    if target.exists():
        return target
    partial = target.with_suffix(".partial")
    dumps = 0
    with open(source, "rb") as src, open(partial, "wb") as out:
        held: list[bytes] = []

        def flush() -> None:
            nonlocal dumps
            if held and _BANNER_LINE.match(held[0]):
                dumps += 1
                if dumps % every == 0 and len(held) > 10:
                    out.writelines(held[: len(held) // 2])
                    return
            out.writelines(held)

        for line in src:
            if _BANNER_LINE.match(line):
                flush()
                held = []
            held.append(line)
            if len(held) > 200_000:  # one endless dump: keep memory flat, write it through
                out.writelines(held)
                held = []
        flush()
    partial.rename(target)
    return target


GPU_CAPTURE = Path("/work/captures/gpu_autotune_big")  # made on the device: its README says how


def gpu_captures() -> tuple[list[Path], str | None]:
    """(folders of real GPU captures, each a dump.log or dump.log.xz beside a cache/ folder; why none
    is there, or None). IRLENS_BENCH_GPU_CAPTURE lists them (':' between folders), else GPU_CAPTURE.
    A dump.log.xz alone is unpacked once into the bench's cache."""
    named = os.environ.get("IRLENS_BENCH_GPU_CAPTURE")
    folders = [Path(item) for item in named.split(":") if item] if named else [GPU_CAPTURE]
    found = []
    for folder in folders:
        if (folder / "dump.log").is_file():
            found.append(folder)
        elif (folder / "dump.log.xz").is_file():
            where = cache_dir() / "gpu" / folder.name
            if not (where / "dump.log").exists():
                where.mkdir(parents=True, exist_ok=True)
                partial = where / "dump.log.partial"
                with open(partial, "wb") as out:
                    subprocess.run(["xz", "-dc", str(folder / "dump.log.xz")], stdout=out, check=True)
                partial.rename(where / "dump.log")
            if (folder / "cache").is_dir() and not (where / "cache").exists():
                (where / "cache").symlink_to((folder / "cache").resolve())
            found.append(where)
    missing = None if found else f"no dump.log in {', '.join(map(str, folders))} (set IRLENS_BENCH_GPU_CAPTURE)"
    return found, missing


def corpus_unpacked() -> Path:
    """The corpus archives unpacked once (for picking the largest snapshots, etc.)."""
    where = cache_dir() / "unpacked"
    done = where / ".done"
    if not done.exists():
        where.mkdir(exist_ok=True)
        for archive in corpus_archives():
            with tarfile.open(archive) as tar:
                tar.extractall(where, filter="data")
        done.touch()
    return where


# -- the map page's input: a run of ~8,000 snapshots with a large LLVM-dumping compilation in it ---

BANNER = re.compile(rb"^(?://\s*-----//.*IR Dump|// -----// SoftwarePipeliner|[;#]?\s*\*\*\* IR Dump)", re.MULTILINE)
TRITON_PYTHON = os.environ.get("IRLENS_BENCH_TRITON_PYTHON", "/work/venvs/t39/bin/python")


def sm100_capture() -> Path | None:
    """Blackwell kernels compiled (no GPU needed) with MLIR_ENABLE_DUMP=1 LLVM_IR_ENABLE_DUMP=1 by the
    Triton at IRLENS_BENCH_TRITON_PYTHON: the corpus's sm90_mix kernels (matmul with tensor
    descriptors, attention) and a block-scaled matmul, for cuda:100. None without that Triton."""
    where = cache_dir() / "sm100"
    log = where / "dump.log"
    if log.exists():
        return log
    if not Path(TRITON_PYTHON).exists():
        return None
    where.mkdir(exist_ok=True)
    with tarfile.open(CORPUS / "sm90_mix.tar.xz") as tar:
        member = tar.extractfile("sm90_mix/src/kernels.py")
        assert member is not None
        (where / "kernels.py").write_bytes(member.read())
    fixtures = REPO / "tests" / "fixtures" / "inline_asm"
    shutil.copy(fixtures / "bw_kernels.py.txt", where / "bw_kernels.py")
    shutil.copy(fixtures / "compile_bw.py.txt", where / "compile_bw.py")
    env = {**os.environ, "TRITON_CACHE_DIR": str(where / "cache"), "MLIR_ENABLE_DUMP": "1", "LLVM_IR_ENABLE_DUMP": "1"}
    partial = where / "dump.log.partial"
    with open(partial, "wb") as err:
        subprocess.run([TRITON_PYTHON, "compile_bw.py"], cwd=where, env=env, stdout=subprocess.DEVNULL,
                       stderr=err, check=True, timeout=1800)
    partial.rename(log)
    return log


def map_run_log(snapshots: int = 8000) -> tuple[Path, str]:
    """(log, kernel whose map page to measure): the sm100 capture, then copies of the corpus's
    sm90_llvm log (MLIR and LLVM dumps of one kernel, renamed per copy) until the log holds about
    ``snapshots`` dumps. Without the sm100 capture, only the copies (and their kernel)."""
    where = cache_dir()
    capture = sm100_capture()
    target = where / f"map-{snapshots}{'-sm100' if capture else ''}.log"
    kernel = "attention_fwd_kernel" if capture else "add_kernel_c0"
    if target.exists():
        return target, kernel
    logs = {path.stem: kernels for path, kernels in _extract_logs(where)}
    filler = where / "logs" / "sm90_llvm.log"
    pattern = re.compile(rb"@(" + b"|".join(re.escape(k.encode()) for k in logs["sm90_llvm"]) + rb")(?![\w$.])")
    per_copy = len(BANNER.findall(filler.read_bytes()))
    count = len(BANNER.findall(capture.read_bytes())) if capture else 0
    partial = target.with_suffix(".partial")
    with open(partial, "wb") as out:
        if capture:
            with open(capture, "rb") as source:
                shutil.copyfileobj(source, out, BLOCK)
        copy = 0
        while count < snapshots:
            _write_copy(out, filler, pattern, f"_c{copy}".encode())
            count += per_copy
            copy += 1
    partial.rename(target)
    return target, kernel
