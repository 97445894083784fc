"""The body `irlens upload` sends: multipart/form-data streamed from the files, folders as tar
archives made on the fly, its length known up front."""

from __future__ import annotations

from collections.abc import Callable, Iterator

Segment = bytes | tuple[str, int]  # literal bytes, or (a local file, its size) read as it streams


def _tar_segments(folder: str) -> list[Segment]:
    """A folder as a tar archive, built as it streams (its length known up front): members are named
    FOLDER/relative/path, so the server sees the same tree `irlens ingest FOLDER` would."""
    import os
    import tarfile

    root = os.path.abspath(folder)
    top = os.path.basename(root.rstrip(os.sep)) or "upload"
    segments: list[Segment] = []
    for parent, subfolders, names in os.walk(root):
        subfolders.sort()
        for name in sorted(names):
            local = os.path.join(parent, name)
            if os.path.islink(local) or not os.path.isfile(local):
                continue
            info = os.stat(local)
            member = tarfile.TarInfo(f"{top}/{os.path.relpath(local, root).replace(os.sep, '/')}")
            member.size, member.mtime, member.mode = info.st_size, int(info.st_mtime), 0o644
            segments.append(member.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
            segments.append((local, info.st_size))
            if info.st_size % tarfile.BLOCKSIZE:
                segments.append(b"\0" * (tarfile.BLOCKSIZE - info.st_size % tarfile.BLOCKSIZE))
    segments.append(b"\0" * (2 * tarfile.BLOCKSIZE))  # the end-of-archive marker
    return segments


class MultipartUpload:
    """A multipart/form-data body streamed from the files (never read whole), with a known length.

    Files go as they are; a folder goes as a tar archive made on the fly (`FOLDER.tar`).
    """

    CHUNK = 1 << 20

    def __init__(self, fields: list[tuple[str, str]], paths: list[str]) -> None:
        import os
        import secrets

        self.boundary = "irlens-" + secrets.token_hex(16)
        self.parts: list[tuple[bytes, list[Segment]]] = []
        self.files = 0
        for name, value in fields:
            self.parts.append((self._head(name), [value.encode("utf-8")]))
        for path in paths:
            if os.path.isdir(path):
                segments = _tar_segments(path)
                self.files += sum(1 for segment in segments if isinstance(segment, tuple))
                name = (os.path.basename(os.path.abspath(path).rstrip(os.sep)) or "upload") + ".tar"
                self.parts.append((self._head("file", name), segments))
            elif os.path.isfile(path):
                self.files += 1
                self.parts.append((self._head("file", os.path.basename(path)), [(path, os.path.getsize(path))]))
            else:
                raise FileNotFoundError(f"no such file or folder: {path}")
        self.tail = f"--{self.boundary}--\r\n".encode("ascii")
        self.length = len(self.tail) + sum(
            len(head) + 2 + sum(len(s) if isinstance(s, bytes) else s[1] for s in segments)
            for head, segments in self.parts
        )
        self.sent = 0

    def _head(self, name: str, filename: str | None = None) -> bytes:
        def quoted(text: str) -> str:  # as browsers do it
            return text.replace("\\", "\\\\").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")

        disposition = f'form-data; name="{quoted(name)}"'
        lines = [f"--{self.boundary}"]
        if filename is None:
            lines.append(f"Content-Disposition: {disposition}")
        else:
            lines += [
                f'Content-Disposition: {disposition}; filename="{quoted(filename)}"',
                "Content-Type: application/octet-stream",
            ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")

    @property
    def content_type(self) -> str:
        return f"multipart/form-data; boundary={self.boundary}"

    def stream(self, progress: Callable[[str, int], None] | None = None) -> Iterator[bytes]:
        for head, segments in self.parts:
            yield self._count(head, progress)
            for segment in segments:
                if isinstance(segment, bytes):
                    yield self._count(segment, progress)
                    continue
                path, size = segment
                with open(path, "rb") as source:
                    left = size
                    while left > 0:
                        block = source.read(min(self.CHUNK, left))
                        if not block:
                            raise OSError(f"{path} shrank while it was being uploaded")
                        left -= len(block)
                        yield self._count(block, progress)
            yield self._count(b"\r\n", progress)
        yield self._count(self.tail, progress)

    def _count(self, data: bytes, progress: Callable[[str, int], None] | None) -> bytes:
        self.sent += len(data)
        if progress:
            progress("", self.sent)
        return data
