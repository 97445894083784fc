"""The `irlens` command: one module per group of commands, each adding its own to the parser:
ingest_commands (ingest, upload, capture), serve (serve, with --get: one in-process request), tokens
(token), check_command (check: the CI gate), database (db, gc/retention, delete, compact, index), replay
(replay). Shared: common; upload's body: multipart.

The top of the house: it may import every room (store, ingest, insight, web); nothing imports it.
Each command imports what it needs when it runs, so `irlens --help` stays fast.
"""

from __future__ import annotations

import argparse
import gc
import sys

from app.cli import check_command, database, ingest_commands, replay, serve, tokens

GROUPS = (ingest_commands, check_command, serve, tokens, database, replay)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="irlens", description="Triton IR dumps, pass by pass, in the browser.")
    commands = parser.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line; ``argv`` None: this process's own (`irlens ...`, `python -m app.cli ...`),
    which ends when the command returns."""
    args = build_parser().parse_args(argv)
    args.ends_process = argv is None
    try:
        code = args.handler(args)
        if argv is None:
            # The process exits next: Python's exit would run the cyclic collector over every object
            # still alive (SQLAlchemy's, the ingest's: 0.1-0.2 s after an ingest) only to free memory
            # the OS takes back anyway. Frozen objects are left out of that walk. Called in process
            # (tests, with argv), the collector is left alone.
            gc.freeze()
        return code
    except RuntimeError as error:
        from app.store.db import DriverMissing  # late, like every command's imports

        if not isinstance(error, DriverMissing):
            raise
        print(f"irlens: {error}", file=sys.stderr)
        return 2

