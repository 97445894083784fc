"""`irlens replay`: re-run each pass of a compilation on its dumped IR with a Triton of the capture's
version, and say which results equal the next dump (app/replay)."""

from __future__ import annotations

import argparse
import json
import re
import sys

from app.cli.common import database_from, settings_from

_PATH = re.compile(r"(?:.*?)/runs/([^/]+)/c/(\d+)/?$")


def parse_compilation(text: str) -> tuple[str, int] | None:
    """`/runs/RUN/c/N` (a full URL or one under a base URL too) or `RUN-N`."""
    from app.urls import parse_compilation_id, parse_int

    match = _PATH.match(text.split("?")[0].removesuffix(".json"))
    if match:
        ordinal = parse_int(match.group(2))
        return None if ordinal is None else (match.group(1), ordinal)
    return parse_compilation_id(text)


def _table(report: dict) -> str:
    lines = []
    for entry in report["passes"]:
        changed = {True: "changed", False: "-", None: "?"}[entry["changed"]]
        reason = (entry.get("reason") or "").replace("\n", " ")
        lines.append(f"/s/{entry['index']:<4} {entry['pass'][:44]:<44} {changed:<8} {entry['status']:<15} {reason[:110]}")
        lines += [f"        {line[:160]}" for line in entry.get("diff", [])[:20]]
    summary = report["summary"]
    lines.append(
        f"total: {summary['passes']} passes: {summary['same']} same, {summary['differs']} differs, "
        f"{summary['not-replayable']} not-replayable, {summary['error']} error; of the {summary['changed']} "
        f"that changed the IR, {summary['changed_same']} same"
    )
    triton = report["triton"]
    lines.append(f"capture: Triton {triton['capture'] or '?'}; replayed with {triton['replayed_with'] or '?'} "
                 f"({triton['python']}); ignoring {', '.join(report['ignored'])}")
    return "\n".join(lines)


def cmd_replay(args: argparse.Namespace) -> int:
    from app.replay.replay import best_interpreter, capture_version, replay, store_source
    from app.replay.runner import Limits, choose_python, parse_pythons

    found = parse_compilation(args.compilation)
    if found is None:
        print(f"irlens: {args.compilation!r} is neither /runs/RUN/c/N nor RUN-N", file=sys.stderr)
        return 2
    run_id, ordinal = found
    settings = settings_from(args)
    limits = Limits(seconds=args.timeout or settings.replay_timeout_seconds,
                    memory_mb=args.memory_mb or settings.replay_memory_mb)

    def go(source) -> dict | None:
        python, why = choose_python(capture_version(source), args.python, settings.replay_pythons)
        candidates = list(parse_pythons(settings.replay_pythons).values())
        if capture_version(source) is None and not args.python and len(candidates) > 1:
            python, why = best_interpreter(source, [python, *candidates] if python else candidates, limits)
        if python is None:
            print(f"irlens: {why}", file=sys.stderr)
            return None
        report = replay(source, python, limits, only=args.pass_index)
        report["triton"]["why"] = why
        return report

    if args.server:
        import httpx

        from app.replay.remote import server_source

        server = args.server.rstrip("/")
        try:
            with httpx.Client(timeout=60.0, headers={"Accept": "application/json"}) as client:
                report = go(server_source(client, server, f"/runs/{run_id}/c/{ordinal}"))
        except httpx.HTTPError as error:
            print(f"irlens: reading the compilation from {server} failed: {error}", file=sys.stderr)
            return 2
    else:
        from sqlalchemy import select

        from app.store.models import Compilation

        database = database_from(args)
        with database.session() as session:
            compilation = session.scalar(select(Compilation).where(
                Compilation.run_id == run_id, Compilation.ordinal == ordinal))
            if compilation is None:
                print(f"irlens: no compilation {run_id}-{ordinal} in that database", file=sys.stderr)
                return 2
            report = go(store_source(session, compilation))
    if report is None:
        return 2
    print(json.dumps(report, indent=1) if args.json else _table(report))
    if report.get("error"):
        print(f"irlens: {report['error']}", file=sys.stderr)
        return 1
    return 0


def add_parser(commands: argparse._SubParsersAction) -> None:
    replay = commands.add_parser(
        "replay", help="re-run each pass of a compilation on its dumped IR and compare with the next dump")
    replay.add_argument("compilation", metavar="COMPILATION", help="its URL path (/runs/RUN/c/N) or id (RUN-N)")
    source = replay.add_mutually_exclusive_group()
    source.add_argument("--db", help="database URL (default: the IRLENS_DB_URL setting or data/irlens.db)")
    source.add_argument("--server", help="read the compilation from this irlens server instead")
    replay.add_argument("--python", help="an interpreter whose triton is the capture's version (default: this "
                        "one if it matches, else the one IRLENS_REPLAY_PYTHONS names)")
    replay.add_argument("--pass", dest="pass_index", type=int, metavar="INDEX",
                        help="only the pass whose dump is /s/INDEX")
    replay.add_argument("--json", action="store_true", help='print {"compilation", "triton", "passes", "summary"}')
    replay.add_argument("--timeout", type=float, help="seconds one pass may run (default: replay_timeout_seconds)")
    replay.add_argument("--memory-mb", type=int, help="the replay process's memory limit (default: replay_memory_mb)")
    replay.set_defaults(handler=cmd_replay)
