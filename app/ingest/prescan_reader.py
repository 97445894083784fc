"""The log helpers' output (app/ingest/log_prescan.py), read ahead of the ingest by one thread.

One thread reads every helper's pipe (a selector picks the next one with a frame waiting): with a
thread per helper, glibc gives each its own malloc arena, and each arena keeps the frames it freed
(two readers: +20-25 MiB of peak RSS on a 1 GB log). Each helper's frames wait in a queue of their
own, which holds at most `limit` bytes; a helper whose queue is full is not read (it waits on its
pipe) until the ingest takes from it. Frames are read from the pipe's descriptor, never through a
buffered file object, so that no frame can wait in a buffer the selector does not see.
"""

from __future__ import annotations

import os
import pickle
import selectors
import struct
import threading
from collections import deque

__all__ = ["FrameReaders"]

_LENGTH = struct.Struct("<Q")  # app/helper_process.py's frame head


class FrameReaders:
    """`next_message(i)`: helper i's next frame, unpickled; None once it ended (or was stopped)."""

    def __init__(self, streams: list, limit: int) -> None:
        self.fds = [stream.fileno() for stream in streams]
        self.count = len(self.fds)
        self.limit = limit
        self._queues: list[deque] = [deque() for _ in self.fds]
        self._sizes = [0] * len(self.fds)
        self._ended = [False] * len(self.fds)
        self._stopped = False
        self._room = threading.Condition()
        self._thread = threading.Thread(target=self._read, name="irlens-prescan-read", daemon=True)
        self._thread.start()

    def next_message(self, index: int):
        with self._room:
            while not self._queues[index] and not self._ended[index] and not self._stopped:
                self._room.wait()
            if not self._queues[index]:
                return None
            payload = self._queues[index].popleft()
            self._sizes[index] -= len(payload)
            self._room.notify_all()
        return pickle.loads(payload)  # our own helper's output

    def stop(self) -> None:
        """After the helpers were killed (their pipes end, which wakes the selector)."""
        with self._room:
            self._stopped = True
            for queue in self._queues:
                queue.clear()
            self._room.notify_all()
        self._thread.join()

    def _read(self) -> None:
        selector = selectors.DefaultSelector()
        registered: set[int] = set()
        open_ = set(range(len(self.fds)))
        try:
            while open_:
                with self._room:
                    while not self._stopped:
                        for index in sorted(open_ - registered):
                            if self._sizes[index] <= self.limit:
                                selector.register(self.fds[index], selectors.EVENT_READ, index)
                                registered.add(index)
                        if registered:
                            break
                        self._room.wait()
                    if self._stopped:
                        break
                for key, _ in selector.select():
                    index = key.data
                    payload = _read_frame(self.fds[index])
                    with self._room:
                        if payload is None:
                            self._ended[index] = True
                            open_.discard(index)
                        else:
                            self._queues[index].append(payload)
                            self._sizes[index] += len(payload)
                        if payload is None or self._sizes[index] > self.limit:
                            selector.unregister(self.fds[index])
                            registered.discard(index)
                        self._room.notify_all()
        finally:
            selector.close()
            with self._room:
                self._ended = [True] * len(self.fds)
                self._room.notify_all()


def _read_exactly(fd: int, size: int) -> bytearray | None:
    buffer = bytearray(size)
    view = memoryview(buffer)
    done = 0
    try:
        while done < size:
            got = os.readv(fd, [view[done:]])
            if not got:
                return None
            done += got
    except OSError:
        return None
    return buffer


def _read_frame(fd: int) -> bytearray | None:
    head = _read_exactly(fd, _LENGTH.size)
    if head is None:
        return None
    return _read_exactly(fd, _LENGTH.unpack(head)[0])
