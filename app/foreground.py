"""Page requests first: the server's background rounds give way while requests are being answered.

Right after an ingest a server indexes the new run, diffs its large pass pairs and recompresses its
texts (app/insight/precompute.py). That is seconds of Python holding the GIL, on the same cores as
the requests: a first visit made then took up to 1.5x as long as the same visit a minute later
(bench/NOTES.md, round 12). The web app counts the requests in flight (`answering`); background work
calls `give_way()` between its small units (one text, one diff, one run), which returns at once on a
request thread and, on a thread marked `background()`, waits until no request has been in flight for
QUIET_SECONDS. The browser that asked still has to lay out and paint what it got: on a one-host
deployment that needs the cores too. The wait is capped, and a wait that reached its cap is followed by
FREE_RUN_SECONDS in which the background does not wait: a server that is never idle still gets a share
of its time (1 s in every 6) for the runs it has to prepare.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

QUIET_SECONDS = 0.3  # after the last response: the browser parses and paints it
MAX_WAIT_SECONDS = 5.0  # one wait at most: background work is slowed under load, never stopped
FREE_RUN_SECONDS = 1.0  # after a wait that reached its cap: background work goes on without waiting

_state = threading.Condition()
_in_flight = 0
_last_answer = 0.0  # time.monotonic() at the end of the last request
_local = threading.local()


@contextmanager
def answering() -> Iterator[None]:
    """Around one request: background work waits while any is in flight."""
    global _in_flight, _last_answer
    with _state:
        _in_flight += 1
    try:
        yield
    finally:
        with _state:
            _in_flight -= 1
            _last_answer = time.monotonic()
            _state.notify_all()


@contextmanager
def background() -> Iterator[None]:
    """Marks the calling thread as background work for the duration: its give_way() calls wait."""
    before = getattr(_local, "background", False)
    _local.background = True
    try:
        yield
    finally:
        _local.background = before


def give_way(max_wait: float = MAX_WAIT_SECONDS) -> float:
    """On a background thread, wait until no request is in flight and the last one ended
    QUIET_SECONDS ago (at most `max_wait`); elsewhere, return at once. Returns the seconds waited."""
    if not getattr(_local, "background", False):
        return 0.0
    started = time.monotonic()
    if started < getattr(_local, "free_until", 0.0):
        return 0.0
    deadline = started + max_wait
    with _state:
        while True:
            now = time.monotonic()
            if now >= deadline:  # waited the whole cap: a busy server's background gets its share now
                _local.free_until = now + FREE_RUN_SECONDS
                break
            if _in_flight == 0:
                quiet_until = _last_answer + QUIET_SECONDS
                if now >= quiet_until:
                    break
                _state.wait(min(quiet_until, deadline) - now)
            else:
                _state.wait(deadline - now)
    return time.monotonic() - started
