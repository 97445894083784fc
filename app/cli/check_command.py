"""`irlens check`: the CI gate. Stores a capture as a new run (in a database, or on a server), then
compares each of its kernels with the same kernel, target and config in a baseline
(app/insight/kernel_check.py) and prints one row per flag with links.

Exit status: 1 when a regression of a `--fail-on` kind is found, 0 otherwise (improvements never
fail a check), 2 for a usage or input error (a missing path, a baseline that names nothing, a
server that refuses the upload)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from urllib.parse import urlencode

from app.cli.common import settings_from
from app.cli.multipart import MultipartUpload

METRICS = ("spills", "registers", "occupancy", "time", "ops", "status")
JSON_KEYS = ("run", "run_url", "baseline", "regressions", "improvements", "new_kernels", "missing_kernels",
             "fail_on", "failed", "kernels_checked", "labels")


def _fail(message: str) -> int:
    print(f"irlens: {message}", file=sys.stderr)
    return 2


def cmd_check(args: argparse.Namespace) -> int:
    from app.store.labels import LabelError, parse_labels

    if args.db and args.server:
        return _fail("--db and --server do not go together: check in a database or on a server")
    missing = [path for path in args.paths if not os.path.exists(path)]
    if missing:
        return _fail(f"{missing[0]} does not exist; nothing was checked")
    fail_on = [kind.strip() for kind in (args.fail_on or ",".join(METRICS)).split(",") if kind.strip()]
    unknown = [kind for kind in fail_on if kind not in METRICS]
    if unknown or not fail_on:
        return _fail(f"--fail-on takes {','.join(METRICS)}; not {', '.join(unknown) or 'nothing'}")
    if args.baseline and args.baseline.startswith("label:") and "=" not in args.baseline:
        return _fail(f"a label baseline is label:KEY=VALUE, not {args.baseline!r}")
    try:
        labels = parse_labels(args.label or [])
    except LabelError as error:
        return _fail(str(error))
    server = (args.server or "").rstrip("/")
    result = (_on_server(args, server, labels, fail_on) if server else _in_database(args, labels, fail_on))
    if isinstance(result, int):
        return result
    _print(args, result, server)
    return 1 if result["failed"] else 0


def _in_database(args: argparse.Namespace, labels: dict, fail_on: list[str]) -> dict | int:
    from app.ingest.disassembler import find_disassembler
    from app.ingest.pipeline import Ingest, IngestError
    from app.insight.kernel_check import CheckError, check_run
    from app.insight.kernel_flags import Thresholds
    from app.insight.kernel_points import ensure_points
    from app.urls import Urls

    settings = settings_from(args)
    db = settings.database()
    try:
        with db.session() as session:
            try:
                run = Ingest(session, title=args.title or "check", tags=[], labels=labels, limits=settings.limits(),
                             disassembler=find_disassembler(settings.sass_disassembler)).ingest(args.paths)
            except IngestError as error:
                return _fail(str(error))
            session.commit()
            ensure_points(session, limit=100_000)  # this run's, and any an `irlens ingest` left without
            try:  # the command line reads the database as its owner does: every run
                return check_run(session, run.id, Urls(settings.base_url), None, Thresholds.from_settings(settings),
                                 baseline=args.baseline, fail_on=fail_on)
            except CheckError as error:
                return _fail(f"{error} (the capture is stored as run {run.id})")
    finally:
        db.dispose()


def _on_server(args: argparse.Namespace, server: str, labels: dict, fail_on: list[str]) -> dict | int:
    import httpx

    token = args.token or os.environ.get("IRLENS_TOKEN")
    headers = {"Accept": "application/json", "User-Agent": "irlens-check"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    fields = [("title", args.title or "check")] + [("label", f"{k}={v}") for k, v in labels.items()]
    if args.listed:
        fields.append(("listed", "1"))
    try:
        body = MultipartUpload(fields, args.paths)
    except OSError as error:
        return _fail(str(error))
    query = urlencode({key: value for key, value in (("baseline", args.baseline or ""),
                                                     ("fail_on", ",".join(fail_on))) if value})
    try:
        with httpx.Client(timeout=httpx.Timeout(60.0, read=args.timeout), headers=headers) as client:
            response = client.post(f"{server}/runs", content=body.stream(None),
                                   headers={"Content-Type": body.content_type, "Content-Length": str(body.length)})
            if response.status_code != 201:
                return _fail(f"{server} answered {response.status_code} to the upload: {_error_text(response)}")
            run = response.json()["run"]
            answer = client.get(f"{server}/runs/{run}/check.json?{query}")
    except (httpx.HTTPError, OSError) as error:
        return _fail(f"the check on {server} failed: {error}")
    if answer.status_code != 200:
        return _fail(f"{server} answered {answer.status_code} to the check of run {run}: {_error_text(answer)}")
    return answer.json()


def _error_text(response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:300]
    return str(data.get("error") or data.get("detail") or data) if isinstance(data, dict) else str(data)


def _print(args: argparse.Namespace, result: dict, server: str) -> None:
    from app.insight.kernel_check import markdown

    if args.json:
        print(json.dumps({key: result.get(key) for key in JSON_KEYS}, indent=1))
        return
    if args.format == "markdown":
        print(markdown(result, server), end="")
        return
    for flag in result["regressions"] + result["improvements"]:
        config = " ".join(f"{key}={value}" for key, value in flag["config"].items())
        mark = "FAIL" if flag.get("fails") else ("worse" if flag["direction"] == "worse" else "better")
        print(f"{mark:<6} {flag['metric']:<10} {flag['kernel']} {flag['target'] or '?'} [{config}] "
              f"{flag['before']} -> {flag['after']}  {server}{flag['compare']}"
              + (f"  first effect: {flag['first_effect_pass']}" if flag.get("first_effect_pass") else ""))
    for entry in result["new_kernels"]:
        print(f"new    {entry['kernel']} {entry['target'] or '?'}  {server}{entry['compilation']}")
    for entry in result["missing_kernels"]:
        print(f"gone   {entry['kernel']} {entry['target'] or '?'}  {server}{entry['compilation']}")
    baselines = ", ".join(entry["run"] for entry in result["baseline"]["runs"]) or "none"
    verdict = "regressions found" if result["failed"] else "no failing regressions"
    print(f"run {result['run']} against {result['baseline']['spec']} ({baselines}): {verdict}; "
          f"{len(result['regressions'])} worse, {len(result['improvements'])} better, "
          f"{len(result['new_kernels'])} new, {len(result['missing_kernels'])} missing  {server}{result['run_url']}")


def add_parser(commands: argparse._SubParsersAction) -> None:
    check = commands.add_parser(
        "check", help="store a capture as a run and flag its kernels against a baseline (a CI gate: exit 1 on a regression)")
    check.add_argument("paths", nargs="+", metavar="PATH", help="the capture: files, folders or archives")
    check.add_argument("--db", help="database URL (default: the IRLENS_DB_URL setting or data/irlens.db)")
    check.add_argument("--server", help="check on this irlens server instead (its URL, with its base path)")
    check.add_argument("--token", help="with --server: an API token (default: IRLENS_TOKEN)")
    check.add_argument("--baseline", metavar="RUN|label:KEY=VALUE",
                       help="the run to compare with, or the latest run with that label "
                       "(default: per kernel, the latest earlier run holding it)")
    check.add_argument("--label", action="append", metavar="KEY=VALUE", help="a label for the new run (repeatable)")
    check.add_argument("--fail-on", metavar="KINDS", help=f"regressions that fail the check (default: all of {','.join(METRICS)})")
    check.add_argument("--title", help="a title for the new run (default: check)")
    check.add_argument("--listed", action="store_true", help="with --server: list the run on the home page")
    check.add_argument("--timeout", type=float, default=3600.0, help="with --server: seconds to wait for the server")
    out = check.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the check as one JSON object")
    out.add_argument("--format", choices=("text", "markdown"), default="text",
                     help="markdown: a table ready to post as a PR comment")
    check.set_defaults(handler=cmd_check)
