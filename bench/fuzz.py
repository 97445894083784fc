"""The parsers' property tests with many random examples: `.venv/bin/python -m bench.fuzz
[--examples N] [--seconds S]`.

Runs every property of tests/test_fuzz_logs.py (logs) and tests/test_fuzz_inputs.py (profiles,
metadata and autotune files with NaN, 1e400, huge integers and random bytes) under the `fuzz` hypothesis profile (a random seed
each round; CI runs the same properties with a fixed seed and few examples). With --seconds it
repeats rounds of N examples per property until the time is up. Prints the inputs tried and the
failures (each with hypothesis's reproduction blob); exits 1 if any property failed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=500, help="examples per property and round")
    parser.add_argument("--seconds", type=float, default=0, help="keep running rounds this long")
    args = parser.parse_args(argv)
    os.environ["IRLENS_FUZZ_PROFILE"] = "fuzz"
    os.environ["IRLENS_FUZZ_EXAMPLES"] = str(args.examples)
    from tests import fuzz_support, test_fuzz_inputs, test_fuzz_logs  # after the profile is chosen

    properties = [
        (name, test) for module in (test_fuzz_logs, test_fuzz_inputs) for name, test in vars(module).items()
        if name.startswith("test_") and hasattr(test, "hypothesis")
    ]
    started = time.monotonic()
    rounds = failures = 0
    while True:
        rounds += 1
        for name, test in properties:
            try:
                test()
            except Exception:  # noqa: BLE001 (any failure of a property is reported, then the next runs)
                failures += 1
                print(f"FAILED {name}", file=sys.stderr)
                traceback.print_exc()
        if time.monotonic() - started >= args.seconds:
            break
    elapsed = time.monotonic() - started
    print(
        f"properties: {len(properties)}  rounds: {rounds}  inputs tried: {fuzz_support.TRIED[0]}  "
        f"time: {elapsed:.1f} s  failures: {failures}  "
        f"intact dumps mixing two logs (undetectable, see the test): {test_fuzz_logs.MIXED_INTACT[0]}"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
