"""parsers.inputs.sources: turning paths, folders and uploads into files, safely.

Archives are built in tmp_path from the real corpus (/work/shared/corpus); the malicious ones are tiny
crafted archives around real corpus bytes. Tests that need the corpus skip when it is absent.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import shutil
import stat
import subprocess
import tarfile
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import pytest
import zstandard

from parsers.inputs.sources import InputFile, InputLimitExceeded, Limits, SourceWalker

SMALL = "sm90_llvm"  # the smallest capture: 12 files, 1.6 MB unpacked


# -- fixtures and helpers ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def corpus() -> Path:
    path = Path(__file__).parents[2] / "shared" / "corpus"
    if not any(path.glob("*.tar.xz")):
        pytest.skip(f"corpus not found at {path}")
    return path


@pytest.fixture(scope="session")
def small_files(corpus: Path) -> dict[str, bytes]:
    """The real files of the smallest capture, by member name, in archive order."""
    return _tar_contents(corpus / f"{SMALL}.tar.xz")


@pytest.fixture(scope="session")
def small_tar(small_files: dict[str, bytes]) -> bytes:
    """The smallest capture as an uncompressed tar (with its folder entries, like the original)."""
    buffer = io.BytesIO()
    _write_tar(buffer, small_files)
    return buffer.getvalue()


def _tar_contents(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {member.name: tar.extractfile(member).read() for member in tar if member.isreg()}  # type: ignore[union-attr]


def _tar_listing(archive: Path) -> list[str]:
    """Regular files as `tar tJf` lists them (the corpus holds only files and folders)."""
    if shutil.which("tar"):
        listing = subprocess.run(["tar", "tJf", str(archive)], capture_output=True, text=True, check=True)
        return [name for name in listing.stdout.splitlines() if not name.endswith("/")]
    with tarfile.open(archive) as tar:
        return [member.name for member in tar if member.isreg()]


def _write_tar(fileobj: BinaryIO, files: dict[str, bytes], mode: str = "w") -> None:
    with tarfile.open(fileobj=fileobj, mode=mode) as tar:
        for folder in sorted({name.rsplit("/", 1)[0] for name in files}):
            info = tarfile.TarInfo(folder)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _crafted_tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _info(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info


def _read_all(
    inputs: Iterable[str | os.PathLike[str] | tuple[str, BinaryIO]], limits: Limits | None = None
) -> tuple[dict[str, bytes], SourceWalker]:
    walker = SourceWalker(limits or Limits())
    files: dict[str, bytes] = {}
    for input_file in walker.walk(inputs):
        with input_file.open() as stream:
            files[input_file.path] = stream.read()
    return files, walker


def _reasons(walker: SourceWalker) -> dict[str, str]:
    return {skipped.path: skipped.reason for skipped in walker.skipped}


def _prefixed(prefix: str, files: dict[str, bytes]) -> dict[str, bytes]:
    return {f"{prefix}/{name}": data for name, data in files.items()}


class OneWayStream(io.RawIOBase):
    """An upload that cannot seek, like a socket or a chunked HTTP body."""

    def __init__(self, inner: BinaryIO) -> None:
        self._inner = inner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._inner.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _gzip_of_zeros(path: Path, megabytes: int, prefix: bytes = b"", suffix: bytes = b"") -> Path:
    """A gzip bomb written chunk by chunk: concatenated gzip members decompress to one stream, so one
    1 MB member of zeros (about 1 KB packed) repeated is as good as compressing it all, and instant."""
    zeros = gzip.compress(bytes(1 << 20), compresslevel=9)
    with path.open("wb") as out:
        if prefix:
            out.write(gzip.compress(prefix))
        for _ in range(megabytes):
            out.write(zeros)
        if suffix:
            out.write(gzip.compress(suffix))
    return path


# -- the corpus ------------------------------------------------------------------------------------------


def test_every_corpus_archive_yields_the_files_tar_lists_in_archive_order(corpus: Path) -> None:
    for archive in sorted(corpus.glob("*.tar.xz")):
        walker = SourceWalker()
        paths = [input_file.path for input_file in walker.walk([archive])]
        assert paths == [f"{archive.name}/{name}" for name in _tar_listing(archive)], archive.name
        assert walker.skipped == [], archive.name


def test_corpus_members_read_back_byte_for_byte(corpus: Path) -> None:
    for name in ("sm90_mix", "gfx1250_fail", SMALL):
        files, walker = _read_all([corpus / f"{name}.tar.xz"])
        assert files == _prefixed(f"{name}.tar.xz", _tar_contents(corpus / f"{name}.tar.xz"))
        assert walker.skipped == []


def test_empty_log_is_yielded_not_skipped(corpus: Path) -> None:
    walker = SourceWalker()
    sizes = {input_file.path: input_file.size for input_file in walker.walk([corpus / "sm90_nodump.tar.xz"])}
    assert sizes["sm90_nodump.tar.xz/sm90_nodump/dump.log"] == 0
    assert walker.skipped == []


# -- formats, found by magic bytes -----------------------------------------------------------------------


def test_tar_gz_bz2_zst_and_plain_tar_all_expand(
    tmp_path: Path, small_files: dict[str, bytes], small_tar: bytes
) -> None:
    archives = {
        "capture.tar": small_tar,
        "capture.tgz": gzip.compress(small_tar),
        "capture.tar.bz2": bz2.compress(small_tar),
        "capture.tar.xz": lzma.compress(small_tar),
        "capture.tar.zst": zstandard.ZstdCompressor().compress(small_tar),
    }
    for name, data in archives.items():
        (tmp_path / name).write_bytes(data)
        files, walker = _read_all([tmp_path / name])
        assert files == _prefixed(name, small_files), name
        assert walker.skipped == []


def test_formats_are_found_by_content_not_by_name(
    tmp_path: Path, small_files: dict[str, bytes], small_tar: bytes
) -> None:
    (tmp_path / "capture.bin").write_bytes(zstandard.ZstdCompressor().compress(small_tar))
    (tmp_path / "notes.txt").write_bytes(gzip.compress(small_files[f"{SMALL}/meta.txt"]))
    files, _ = _read_all([tmp_path / "capture.bin", tmp_path / "notes.txt"])
    assert files == {**_prefixed("capture.bin", small_files), "notes.txt": small_files[f"{SMALL}/meta.txt"]}


def test_single_compressed_logs_drop_their_suffix(tmp_path: Path, small_files: dict[str, bytes]) -> None:
    log = small_files[f"{SMALL}/dump.log"]
    compressors = {
        ".gz": gzip.compress,
        ".xz": lzma.compress,
        ".zst": zstandard.ZstdCompressor().compress,
        ".bz2": bz2.compress,
    }
    for suffix, compress in compressors.items():
        (tmp_path / f"dump.log{suffix}").write_bytes(compress(log))
        files, walker = _read_all([tmp_path / f"dump.log{suffix}"])
        assert files == {"dump.log": log}, suffix
        assert walker.skipped == []


def test_zip_in_tar_and_tar_xz_in_zip_are_expanded(
    corpus: Path, tmp_path: Path, small_files: dict[str, bytes]
) -> None:
    # bundle.zip holds the real sm90_llvm.tar.xz; outer.tar holds bundle.zip.
    bundle = tmp_path / "bundle.zip"
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(corpus / f"{SMALL}.tar.xz", f"{SMALL}.tar.xz")
        archive.writestr("notes/meta.txt", small_files[f"{SMALL}/meta.txt"])
    with tarfile.open(tmp_path / "outer.tar", "w") as tar:
        tar.add(bundle, "bundle.zip")

    files, walker = _read_all([tmp_path / "outer.tar"])
    assert files == {
        **_prefixed(f"outer.tar/bundle.zip/{SMALL}.tar.xz", small_files),
        "outer.tar/bundle.zip/notes/meta.txt": small_files[f"{SMALL}/meta.txt"],
    }
    assert walker.skipped == []


def test_archives_nested_deeper_than_max_depth_are_skipped(
    tmp_path: Path, small_files: dict[str, bytes], small_tar: bytes
) -> None:
    # level1.zip > level2.tar > level3.zip > capture.tar.gz: the fourth archive is one too deep.
    level3 = io.BytesIO()
    with zipfile.ZipFile(level3, "w") as archive:
        archive.writestr("capture.tar.gz", gzip.compress(small_tar))
        archive.writestr("meta.txt", small_files[f"{SMALL}/meta.txt"])
    level2 = io.BytesIO()
    _write_tar(level2, {"level3.zip": level3.getvalue()})
    with zipfile.ZipFile(tmp_path / "level1.zip", "w") as archive:
        archive.writestr("level2.tar", level2.getvalue())

    files, walker = _read_all([tmp_path / "level1.zip"])
    assert list(files) == ["level1.zip/level2.tar/level3.zip/meta.txt"]
    assert _reasons(walker) == {
        "level1.zip/level2.tar/level3.zip/capture.tar.gz": "archive nested more than 3 levels deep (max_depth)"
    }
    files, walker = _read_all([tmp_path / "level1.zip"], Limits(max_depth=4))
    assert len(files) == 1 + len(small_files) and walker.skipped == []


# -- uploads -----------------------------------------------------------------------------------------------


def test_non_seekable_upload_streams_like_a_file(
    corpus: Path, tmp_path: Path, small_files: dict[str, bytes]
) -> None:
    archive = corpus / f"{SMALL}.tar.xz"
    with archive.open("rb") as raw:
        files, walker = _read_all([("uploads/../capture.tar.xz", OneWayStream(raw))])
    assert files == _prefixed("capture.tar.xz", small_files)
    assert walker.skipped == []

    # A zip cannot be read without seeking: it is spooled first.
    bundle = tmp_path / "bundle.zip"
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, data in small_files.items():
            zipped.writestr(name, data)
    with bundle.open("rb") as raw:
        files, walker = _read_all([("bundle.zip", OneWayStream(raw))])
    assert files == _prefixed("bundle.zip", small_files)

    # A plain file from a one-way stream.
    log = small_files[f"{SMALL}/dump.log"]
    files, _ = _read_all([("dump.log", OneWayStream(io.BytesIO(log)))])
    assert files == {"dump.log": log}


def test_seekable_upload_is_read_in_place(corpus: Path, small_files: dict[str, bytes]) -> None:
    upload = io.BytesIO((corpus / f"{SMALL}.tar.xz").read_bytes())
    bundle = io.BytesIO()
    with zipfile.ZipFile(bundle, "w") as zipped:
        zipped.writestr("meta.txt", small_files[f"{SMALL}/meta.txt"])
    bundle.seek(0)
    files, _ = _read_all([("capture.tar.xz", upload), ("bundle.zip", bundle)])
    assert files == {
        **_prefixed("capture.tar.xz", small_files),
        "bundle.zip/meta.txt": small_files[f"{SMALL}/meta.txt"],
    }
    assert not upload.closed and not bundle.closed  # uploads belong to the caller


# -- hostile archives ----------------------------------------------------------------------------------------


def test_path_traversal_and_absolute_members_are_skipped(
    tmp_path: Path, small_files: dict[str, bytes]
) -> None:
    meta = small_files[f"{SMALL}/meta.txt"]
    archive = _crafted_tar(
        tmp_path / "evil.tar",
        [
            (_info("../../etc/cron.d/evil"), meta),
            (_info("/etc/passwd"), meta),
            (_info("run/../../escape.txt"), meta),
            (_info("./run/meta.txt"), meta),
        ],
    )
    files, walker = _read_all([archive])
    assert files == {"evil.tar/run/meta.txt": meta}
    assert _reasons(walker) == {
        "evil.tar/../../etc/cron.d/evil": "path traversal (../..)",
        "evil.tar/etc/passwd": "absolute path",
        "evil.tar/run/../../escape.txt": "path traversal (../..)",
    }

    with zipfile.ZipFile(tmp_path / "evil.zip", "w") as zipped:
        zipped.writestr("..\\..\\evil.txt", meta)  # Windows separators do not hide traversal
        zipped.writestr("run/meta.txt", meta)
    files, walker = _read_all([tmp_path / "evil.zip"])
    assert files == {"evil.zip/run/meta.txt": meta}
    assert _reasons(walker) == {"evil.zip/../../evil.txt": "path traversal (../..)"}


def test_links_and_devices_in_a_tar_are_skipped(tmp_path: Path, small_files: dict[str, bytes]) -> None:
    meta = small_files[f"{SMALL}/meta.txt"]
    archive = _crafted_tar(
        tmp_path / "links.tar",
        [
            (_info("run/meta.txt"), meta),
            (_info("run/passwd", tarfile.SYMTYPE, "/etc/passwd"), None),
            (_info("run/hard", tarfile.LNKTYPE, "run/meta.txt"), None),
            (_info("run/fifo", tarfile.FIFOTYPE), None),
            (_info("run/null", tarfile.CHRTYPE), None),
        ],
    )
    files, walker = _read_all([archive])
    assert files == {"links.tar/run/meta.txt": meta}
    assert _reasons(walker) == {
        "links.tar/run/passwd": "symlink",
        "links.tar/run/hard": "hardlink",
        "links.tar/run/fifo": "device or fifo",
        "links.tar/run/null": "device or fifo",
    }


def test_oversized_tar_long_name_header_is_refused_before_it_is_read(tmp_path: Path) -> None:
    long_name = _info("././@LongLink", tarfile.GNUTYPE_LONGNAME)
    long_name.size = 1 << 30  # tarfile would read a gigabyte into memory for this name
    archive = tmp_path / "long.tar"
    archive.write_bytes(long_name.tobuf(format=tarfile.GNU_FORMAT) + bytes(2 * tarfile.BLOCKSIZE))
    files, walker = _read_all([archive])
    assert files == {}
    assert _reasons(walker) == {"long.tar": "corrupt archive: 1.0 GB extended header (limit 1.0 MB)"}


def test_zip_symlink_and_macos_junk_are_skipped(tmp_path: Path, small_files: dict[str, bytes]) -> None:
    meta = small_files[f"{SMALL}/meta.txt"]
    link = zipfile.ZipInfo("run/passwd")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(tmp_path / "mac.zip", "w") as zipped:
        zipped.writestr("run/meta.txt", meta)
        zipped.writestr(link, "/etc/passwd")
        zipped.writestr("__MACOSX/run/._meta.txt", b"\0\5\26\7")
        zipped.writestr("run/.DS_Store", b"\0\0\0\1Bud1")
    files, walker = _read_all([tmp_path / "mac.zip"])
    assert files == {"mac.zip/run/meta.txt": meta}
    assert _reasons(walker) == {
        "mac.zip/run/passwd": "symlink",
        "mac.zip/__MACOSX/run/._meta.txt": "macOS metadata",
        "mac.zip/run/.DS_Store": "macOS metadata",
    }


def test_folder_walk_is_sorted_and_skips_links_fifos_and_junk(
    tmp_path: Path, small_files: dict[str, bytes]
) -> None:
    root = tmp_path / "capture"
    for name, data in small_files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key").write_bytes(small_files[f"{SMALL}/meta.txt"])
    run = root / SMALL
    (run / "linked_dir").symlink_to(secret)
    (run / "linked_file").symlink_to(secret / "key")
    (run / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    if hasattr(os, "mkfifo"):
        os.mkfifo(run / "pipe")

    files, walker = _read_all([root])
    expected = []
    for folder, subfolders, names in os.walk(root):
        subfolders.sort()
        relative = [(Path(folder) / name).relative_to(root).as_posix() for name in sorted(names)]
        expected += [f"capture/{name}" for name in relative if name in small_files]
    assert list(files) == expected  # names sorted, a folder's files before its subfolders
    assert files == _prefixed("capture", small_files)
    reasons = _reasons(walker)
    assert reasons.pop(f"capture/{SMALL}/pipe", "not a regular file (device, fifo or socket)") == (
        "not a regular file (device, fifo or socket)"
    )
    assert reasons == {
        f"capture/{SMALL}/linked_dir": "symlink",
        f"capture/{SMALL}/linked_file": "symlink",
        f"capture/{SMALL}/.DS_Store": "macOS metadata",
    }


# -- limits --------------------------------------------------------------------------------------------------


def test_gzip_bomb_is_stopped_by_the_ratio_limit(tmp_path: Path) -> None:
    bomb = _gzip_of_zeros(tmp_path / "dump.log.gz", megabytes=200)
    walker = SourceWalker(Limits(max_ratio=100))
    with pytest.raises(InputLimitExceeded, match=r"dump\.log\.gz looks like a decompression bomb.*max_ratio"):
        for input_file in walker.walk([bomb]):
            with input_file.open() as stream:
                while stream.read(1 << 20):
                    pass


def test_bomb_inside_a_tar_gz_is_stopped_even_when_nobody_reads_it(
    tmp_path: Path, small_files: dict[str, bytes]
) -> None:
    header = tarfile.TarInfo("run/zeros.log")
    header.size = 200 << 20
    end = bytes(2 * tarfile.BLOCKSIZE)
    bomb = _gzip_of_zeros(tmp_path / "bomb.tar.gz", megabytes=200, prefix=header.tobuf(), suffix=end)
    walker = SourceWalker(Limits(max_total_bytes=32 << 20))
    with pytest.raises(InputLimitExceeded, match=r"archive bomb\.tar\.gz expands beyond the 32\.0 MB limit"):
        for _ in walker.walk([bomb]):
            pass  # the walker skips the member itself: decompression is still metered


def test_zip_bomb_is_refused_from_its_directory(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    with (
        zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zipped,
        zipped.open("zeros.log", "w") as member,
    ):
        for _ in range(100):
            member.write(bytes(1 << 20))
    with pytest.raises(
        InputLimitExceeded, match=r"bomb\.zip looks like a decompression bomb: it declares 100\.0 MB"
    ):
        list(SourceWalker(Limits(max_ratio=50)).walk([bomb]))


def test_total_size_limit_names_the_archive(corpus: Path) -> None:
    with pytest.raises(
        InputLimitExceeded, match=r"archive gpu_inductor\.tar\.xz expands beyond the 1\.0 MB limit"
    ):
        _read_all([corpus / "gpu_inductor.tar.xz"], Limits(max_total_bytes=1 << 20))


def test_total_size_limit_counts_plain_files_too(tmp_path: Path, small_files: dict[str, bytes]) -> None:
    (tmp_path / "dump.log").write_bytes(small_files[f"{SMALL}/dump.log"])
    with pytest.raises(
        InputLimitExceeded, match=r"exceed the 1\.0 KB limit \(max_total_bytes\) at dump\.log"
    ):
        _read_all([tmp_path / "dump.log"], Limits(max_total_bytes=1 << 10))


def test_too_many_files(corpus: Path) -> None:
    with pytest.raises(InputLimitExceeded, match=r"more than 10 files in the inputs \(max_files\)"):
        list(SourceWalker(Limits(max_files=10)).walk([corpus / "sm90_mix.tar.xz"]))


# -- corrupt input -----------------------------------------------------------------------------------------


def test_truncated_tar_xz_reports_corrupt_and_keeps_the_members_before_the_cut(
    corpus: Path, tmp_path: Path
) -> None:
    original = corpus / "sm90_mix.tar.xz"
    cut = tmp_path / "sm90_mix.tar.xz"
    cut.write_bytes(original.read_bytes()[: original.stat().st_size // 2])
    complete = _prefixed("sm90_mix.tar.xz", _tar_contents(original))

    files, walker = _read_all([cut, corpus / f"{SMALL}.tar.xz"])
    cut_files = [path for path in files if path.startswith("sm90_mix.tar.xz/")]
    assert 5 < len(cut_files) < len(complete)
    assert cut_files == list(complete)[: len(cut_files)]
    *whole, partial = cut_files
    assert all(files[path] == complete[path] for path in whole)
    assert complete[partial].startswith(files[partial])  # the member at the cut ends early
    assert (
        len([path for path in files if path.startswith(f"{SMALL}.tar.xz/")]) == 12
    )  # the next input goes on
    [skipped] = walker.skipped
    assert skipped.path == "sm90_mix.tar.xz"
    assert skipped.reason.startswith("corrupt archive: truncated")


def test_plain_tar_cut_at_a_header_is_reported(tmp_path: Path, small_tar: bytes) -> None:
    with tarfile.open(fileobj=io.BytesIO(small_tar)) as tar:
        last = tar.getmembers()[-1]
    cut = tmp_path / "cut.tar"
    cut.write_bytes(small_tar[: last.offset])  # ends right before a header: no end-of-archive marker
    files, walker = _read_all([cut])
    assert len(files) == 11
    assert _reasons(walker) == {"cut.tar": "corrupt archive: truncated: no end-of-archive marker"}


def test_garbage_and_bad_crc_do_not_stop_the_walk(tmp_path: Path, small_files: dict[str, bytes]) -> None:
    meta, log = small_files[f"{SMALL}/meta.txt"], small_files[f"{SMALL}/dump.log"]
    (tmp_path / "garbage.xz").write_bytes(b"\xfd7zXZ\x00" + meta)
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("meta.txt", meta)
        archive.writestr("dump.log", log)
    data = bytearray(zipped.getvalue())
    data[data.index(meta) + 3] ^= 0xFF  # flip a byte inside meta.txt: its CRC no longer matches
    (tmp_path / "crc.zip").write_bytes(bytes(data))

    files, walker = _read_all([tmp_path / "garbage.xz", tmp_path / "crc.zip"])
    assert files["crc.zip/dump.log"] == log
    reasons = _reasons(walker)
    assert reasons["garbage.xz"].startswith("corrupt archive: ")
    assert reasons["crc.zip/meta.txt"].startswith("corrupt archive: Bad CRC-32")


# -- the InputFile contract ----------------------------------------------------------------------------------


def test_member_can_be_reopened_to_sniff_but_not_after_the_walker_moves_on(corpus: Path) -> None:
    walker = SourceWalker()
    seen: list[InputFile] = []
    for input_file in walker.walk([corpus / f"{SMALL}.tar.xz"]):
        with input_file.open() as first:
            head = first.read(16)
        with input_file.open() as second:
            assert second.read(16) == head
        seen.append(input_file)
    with pytest.raises(ValueError, match="moved to the next file"):
        seen[0].open()


# -- the rest of the hostile-archive matrix: many members, deep nesting, bombs at 1000x and more -------------


def _tiny_members_tar(path: Path, count: int, data: bytes) -> Path:
    """A tar of `count` tiny members, written member by member (as a hostile client would)."""
    with tarfile.open(path, "w") as tar:
        for number in range(count):
            info = tarfile.TarInfo(f"many/k{number:05d}.txt")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _walk_traced(inputs: list, limits: Limits | None = None) -> tuple[int, int, int, SourceWalker]:
    """(files, bytes read, peak Python memory during the walk, walker), reading every file."""
    import tracemalloc

    walker = SourceWalker(limits or Limits())
    files = read = 0
    tracemalloc.start()
    try:
        for input_file in walker.walk(inputs):
            files += 1
            with input_file.open() as stream:
                while chunk := stream.read(1 << 16):
                    read += len(chunk)
        return files, read, tracemalloc.get_traced_memory()[1], walker
    finally:
        tracemalloc.stop()


def test_ten_thousand_tiny_members_are_streamed_within_the_limits(
    tmp_path: Path, small_files: dict[str, bytes]
) -> None:
    tiny = small_files[f"{SMALL}/meta.txt"][:40]
    archive = _tiny_members_tar(tmp_path / "many.tar", 10_000, tiny)
    files, read, peak, walker = _walk_traced([archive])
    assert (files, read, walker.skipped) == (10_000, 10_000 * len(tiny), [])
    # Streamed: tar's member list is dropped as it goes, so memory does not grow with the member count.
    assert peak < 8 << 20, f"peak {peak >> 20} MiB"


def test_ten_thousand_members_beyond_max_files_are_refused_by_name(
    tmp_path: Path, small_files: dict[str, bytes]
) -> None:
    tiny = small_files[f"{SMALL}/meta.txt"][:40]
    archive = _tiny_members_tar(tmp_path / "many.tar", 10_000, tiny)
    with pytest.raises(InputLimitExceeded, match=r"^more than 9999 files in the inputs \(max_files\)$"):
        _walk_traced([archive], Limits(max_files=9_999))
    with zipfile.ZipFile(tmp_path / "many.zip", "w") as zipped:
        for number in range(10_000):
            zipped.writestr(f"many/k{number:05d}.txt", tiny)
    # A zip says how many entries it holds: refused from its directory, before any is read.
    with pytest.raises(
        InputLimitExceeded, match=r"^archive many\.zip holds 10000 entries, more than the 9999 file limit"
    ):
        _walk_traced([tmp_path / "many.zip"], Limits(max_files=9_999))


def test_deep_member_paths_and_long_chains_of_archives(tmp_path: Path, small_files: dict[str, bytes]) -> None:
    meta = small_files[f"{SMALL}/meta.txt"]
    deep = "/".join(["d"] * 2000) + "/meta.txt"  # 4000-byte name: a pax header, well under its 1 MB bound
    files, walker = _read_all([_crafted_tar(tmp_path / "deep.tar", [(_info(deep), meta)])])
    assert files == {f"deep.tar/{deep}": meta} and walker.skipped == []

    # 40 gzip layers around a log: expanded only to max_depth, no recursion past it, nothing read.
    nested = meta
    for _ in range(40):
        nested = gzip.compress(nested)
    (tmp_path / "onion.log.gz").write_bytes(nested)
    files, walker = _read_all([tmp_path / "onion.log.gz"])
    assert files == {}
    assert _reasons(walker) == {"onion.log": "archive nested more than 3 levels deep (max_depth)"}


def _zstd_of_zeros(path: Path, megabytes: int) -> Path:
    """A zstd bomb: one 1 MiB frame of zeros (a few dozen bytes packed) repeated; frames concatenate."""
    frame = zstandard.ZstdCompressor(level=19).compress(bytes(1 << 20))
    path.write_bytes(frame * megabytes)
    return path


def test_zstd_bomb_is_refused_with_flat_memory(tmp_path: Path) -> None:
    bomb = _zstd_of_zeros(tmp_path / "dump.log.zst", megabytes=4096)  # 4 GiB from a few hundred KB
    assert (4 << 30) / bomb.stat().st_size > 1000
    with pytest.raises(InputLimitExceeded, match=r"dump\.log\.zst looks like a decompression bomb.*max_ratio"):
        _walk_traced([bomb])
    # Stopped soon after the 64 MB floor of the ratio test (the decoder reads its input 128 KiB ahead,
    # which the ratio counts), holding one chunk at a time: read again, counting bytes and memory.
    read = peak = 0

    def reader() -> None:
        nonlocal read, peak
        import tracemalloc

        tracemalloc.start()
        try:
            for input_file in SourceWalker().walk([bomb]):
                with input_file.open() as stream:
                    while chunk := stream.read(1 << 16):
                        read += len(chunk)
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()

    with pytest.raises(InputLimitExceeded):
        reader()
    assert 64 << 20 <= read <= 1000 * (128 << 10) + (1 << 20), read  # of 4 GiB
    assert peak < 8 << 20, f"peak {peak >> 20} MiB"


def test_zip_bomb_over_1000x_is_refused_before_a_byte_is_expanded(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_BZIP2) as zipped, zipped.open("zeros.log", "w") as member:
        for _ in range(256):  # bzip2 packs 256 MiB of zeros into a few hundred bytes
            member.write(bytes(1 << 20))
    assert (256 << 20) / bomb.stat().st_size > 1000
    opened: list[str] = []
    with pytest.raises(InputLimitExceeded, match=r"bomb\.zip looks like a decompression bomb: it declares 256\.0 MB"):
        for input_file in SourceWalker().walk([bomb]):
            opened.append(input_file.path)
    assert opened == []


def test_zip_whose_directory_lies_about_sizes_expands_no_further_than_declared(tmp_path: Path) -> None:
    """A central directory declaring 1 KB for 100 MiB of deflated zeros: zipfile stops at the declared
    size, whose CRC then fails (while the walker sniffs it), so the lie buys the attacker nothing."""
    bomb = tmp_path / "liar.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zipped, zipped.open("zeros.log", "w") as member:
        for _ in range(100):
            member.write(bytes(1 << 20))
    data = bytearray(bomb.read_bytes())
    directory = data.rindex(b"PK\x01\x02")
    data[directory + 24 : directory + 28] = (1024).to_bytes(4, "little")  # uncompressed size
    bomb.write_bytes(bytes(data))
    files, read, peak, walker = _walk_traced([bomb])
    assert (files, read) == (0, 0)
    assert _reasons(walker) == {"liar.zip/zeros.log": "corrupt archive: Bad CRC-32 for file 'zeros.log'"}
    assert peak < 8 << 20, f"peak {peak >> 20} MiB"


def test_timeout_stops_the_walk_as_bytes_are_read(monkeypatch: pytest.MonkeyPatch, corpus: Path) -> None:
    import itertools
    import types

    import parsers.inputs.source_limits

    ticks = itertools.count()  # a clock that moves one second each time it is read: no real waiting
    clock = types.SimpleNamespace(monotonic=lambda: float(next(ticks)))
    monkeypatch.setattr(parsers.inputs.source_limits, "time", clock)
    with pytest.raises(
        InputLimitExceeded, match=r"^the ingest took longer than the 5 s limit at .+ \(ingest_timeout_seconds\)$"
    ):
        _read_all([corpus / "sm90_mix.tar.xz"], Limits(timeout_seconds=5))
    files, _ = _read_all([corpus / "sm90_mix.tar.xz"], Limits(timeout_seconds=None))
    assert files


def test_skipping_a_plain_file_seeks_and_counts_what_it_passes_like_a_read(tmp_path: Path) -> None:
    """What the ingest does over a log the log helper read (app/ingest/log_prescan.py): the bytes passed are
    counted and charged as if read, up to the file's end; a gzip stream cannot seek and is read."""
    from app.ingest.file_streams import PrefixedStream

    data = bytes(range(256)) * 4096  # 1 MiB
    plain = tmp_path / "plain.log"
    plain.write_bytes(data)
    packed = tmp_path / "packed.log.gz"
    packed.write_bytes(gzip.compress(data))
    for path, seeks in ((plain, True), (packed, False)):
        counted: list[int] = []
        for input_file in SourceWalker(Limits(max_total_bytes=(1 << 20) + 10)).walk([path]):
            with input_file.open() as raw:
                stream = PrefixedStream(raw.read(100), raw, counted.append)
                assert stream.read(50) == data[:50]
                assert stream.skip(1000) == 1000
                assert stream.read(10) == data[1050:1060]
                assert raw.seekable() is seeks
                assert stream.skip(1 << 30) == len(data) - 1060  # to the end, no further
                assert stream.skip(5) == 0 and stream.read(5) == b""
        assert sum(counted) == len(data)
    with pytest.raises(InputLimitExceeded, match="limit"):
        for input_file in SourceWalker(Limits(max_total_bytes=1 << 19)).walk([plain]):
            with input_file.open() as raw:
                PrefixedStream(raw.read(100), raw, lambda count: None).skip(len(data))
