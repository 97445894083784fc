"""What the command groups share: settings and the database from the options, the progress bar,
the collector paused while the imports run."""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported late at run time, so `irlens --help` stays fast
    from app.settings import Settings
    from app.store.db import Database


def settings_from(args: argparse.Namespace) -> Settings:
    # pydantic-settings costs a tenth of a second: imported by the commands that read settings only
    from app.settings import Settings

    overrides = {}
    if getattr(args, "db", None):
        overrides["db_url"] = args.db
    return Settings(**overrides)


@contextmanager
def collector_paused(freeze: bool = False) -> Iterator[None]:
    """Imports make ~80,000 objects that live as long as the process, and next to no garbage: with
    the cyclic collector on, it walks them again and again while they are made (0.05-0.1 s of an
    ingest's 0.45 s of imports). Paused meanwhile, then back as it was. ``freeze``: in a process that
    ends with the command, they are also moved out of the collector's sight for good, so that the
    full collections during the command do not walk them either."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()


class ProgressBar:
    """Bytes read so far and the rate, redrawn at most 10 times a second on a terminal."""

    def __init__(self, total: int | None) -> None:
        self.total, self.start, self.last = total, time.monotonic(), 0.0

    def __call__(self, _name: str, done: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.1:
            return
        self.last = now
        rate = done / max(now - self.start, 1e-6) / 1e6
        if self.total:
            share = min(done / self.total, 1.0)
            bar = "#" * int(share * 30)
            line = f"\r[{bar:<30}] {share:6.1%} {done / 1e6:9.1f} MB {rate:7.1f} MB/s"
        else:
            line = f"\r{done / 1e6:9.1f} MB read {rate:7.1f} MB/s"
        sys.stderr.write(line)
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")



def database_from(args: argparse.Namespace) -> Database:
    return settings_from(args).database()

