"""The log scan in N helper processes over byte ranges (app/ingest/log_prescan.py, app/ingest/log_ranges.py),
as an ingest takes it, without the database: `python -m bench.scan_workers [LOG] [N...]`.

For each N: CPU per MB (the helpers' and this process's, which takes the records in order), each
helper's CPU (the wall it would take with a core of its own), the wall here, and whether the records
equal those of one helper (a digest of every record). On a machine of fewer cores than N the wall
is shared; the per-helper CPU says what N cores would give.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import resource
import sys
import time
from pathlib import Path


def scan(path: Path, workers: int) -> dict:
    from app.ingest.log_prescan import LogPrescan
    from parsers.records import Dump

    self_before = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter()
    prescan = LogPrescan.start([str(path)], workers=workers)
    assert prescan is not None, "a log of 4 MB or more starts the helpers"
    digest = hashlib.sha256()
    count = 0
    try:
        stream = open(path, "rb")  # noqa: SIM115 -- the ingest's own stream, moved on as it would be
        for record, body_digest, _ in prescan.records(str(path), stream):
            count += 1
            if type(record) is Dump:  # the body by the sha256 its helper sent (hashing here would be the long pole)
                digest.update(pickle.dumps((record.header.raw, record.line, record.damage, record.truncated,
                                            len(record.body), body_digest)))
            else:
                digest.update(pickle.dumps(record))
        stream.close()
        assert prescan.files_scanned == 1, "the helpers' records, not a scan here"
        helpers = []
        for process in prescan.processes:
            _, _, usage = os.wait4(process.pid, 0)
            process.returncode = 0
            helpers.append(usage.ru_utime + usage.ru_stime)
    finally:
        prescan.close()
    wall = time.perf_counter() - wall
    self_after = resource.getrusage(resource.RUSAGE_SELF)
    own = self_after.ru_utime + self_after.ru_stime - self_before.ru_utime - self_before.ru_stime
    return {"workers": len(helpers), "helpers": helpers, "own": own, "wall": wall, "records": count,
            "digest": digest.hexdigest()}


def main(argv: list[str]) -> None:
    from bench import inputs

    path = Path(argv[0]) if argv and not argv[0].isdigit() else inputs.big_log(356 * inputs.MiB)
    counts = [int(arg) for arg in argv if arg.isdigit()] or [1, 2, 4]
    rounds = int(os.environ.get("SCAN_ROUNDS", "1"))
    mb = path.stat().st_size / 1e6
    with open(path, "rb") as warm:
        while warm.read(16 << 20):
            pass
    first = None
    for _ in range(rounds):
        for workers in counts:
            result = scan(path, workers)
            first = first or result["digest"]
            helpers = result["helpers"]
            total = sum(helpers) + result["own"]
            print(f"{result['workers']} helper(s): CPU {total:.2f} s ({total / mb * 1000:.2f} ms/MB): helpers "
                  f"{' + '.join(f'{cpu:.2f}' for cpu in helpers)} s, records taken here {result['own']:.2f} s; "
                  f"wall here {result['wall']:.2f} s; with a core each max({max(helpers):.2f}, "
                  f"{result['own']:.2f}) s; records equal to the first run's: {result['digest'] == first}; "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main(sys.argv[1:])
