"""Does a change to app/diff/ keep every corpus diff? `python -m bench.diff_equivalence DB OUT [--against OLD]`.

Diffs every distinct adjacent pair of snapshots (same compilation, consecutive indexes, different
blobs) of a corpus database, with default options and with SSA+alias numbering ignored, and writes
per pair a digest of the segments plus the paired/equal row totals and the CPU time to OUT (JSON).
With `--against OLD` (the same run on the code before the change) it lists every pair whose segments
differ, and whether any alignment got shorter (fewer equal rows). DB is the bench's corpus database
(`python -m bench --quick --only storage --keep` keeps it: corpus.db in the run's directory). Run
it from a copy: a server of a newer checkout may migrate the database past this code's schema.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import itertools
import json
import sqlite3
import sys
import time
from pathlib import Path

from app import diff
from app.render import blob_reader
from app.settings import Settings

OPTION_SETS = {"default": diff.DiffOptions(), "ssa+alias": diff.DiffOptions(ssa=True, alias=True)}


def adjacent_pairs(db_path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db_path) as con:
        rows = con.execute(
            'select s.compilation_pk, s."index", b.hash from snapshots s join blobs b on b.id = s.blob_id '
            'order by s.compilation_pk, s."index"'
        ).fetchall()
    # hashes are stored as raw bytes since migration 0010; the app (and OUT) use hex
    rows = [(c, i, b.hex() if isinstance(b, bytes) else b) for c, i, b in rows]
    pairs, seen = [], set()
    for (c1, i1, b1), (c2, i2, b2) in itertools.pairwise(rows):
        if c1 == c2 and i2 == i1 + 1 and b1 != b2 and (b1, b2) not in seen:
            seen.add((b1, b2))
            pairs.append((b1, b2))
    return pairs


def row_counts(result: diff.DiffResult) -> tuple[int, int]:
    paired = sum(s.a_end - s.a_start for s in result.segments if s.op == diff.REPLACE)
    equal = sum(s.a_end - s.a_start for s in result.segments if s.op == diff.EQUAL)
    return paired, equal


def run(db_path: Path) -> dict:
    pairs = adjacent_pairs(db_path)
    database = Settings(db_url=f"sqlite:///{db_path}").database()
    out: dict = {}
    gc.collect()
    gc.freeze()
    with database.session() as session:
        texts: dict[str, str] = {}

        def text(blob: str) -> str:
            if blob not in texts:
                if len(texts) > 200:
                    texts.clear()
                texts[blob] = blob_reader.text(session, blob) or ""
            return texts[blob]

        for name, options in OPTION_SETS.items():
            cpu = 0.0
            per_pair = []
            for a, b in pairs:
                a_text, b_text = text(a), text(b)
                start = time.thread_time()
                result = diff.diff_texts(a_text, b_text, options)
                cpu += time.thread_time() - start
                digest = hashlib.md5(repr([tuple(s) for s in result.segments]).encode()).hexdigest()
                per_pair.append([a, b, digest, *row_counts(result)])
            paired = sum(p[3] for p in per_pair)
            equal = sum(p[4] for p in per_pair)
            out[name] = {"pairs": per_pair, "cpu_s": round(cpu, 2), "paired": paired, "equal": equal}
            print(f"{name}: {len(pairs)} pairs, cpu {cpu:.2f} s, paired {paired}, equal {equal}", flush=True)
    return out


def compare(new: dict, old: dict) -> int:
    """Print the differences; the number of pairs whose segments differ."""
    differing = 0
    for name, entry in new.items():
        old_pairs = {(p[0], p[1]): p for p in old[name]["pairs"]}
        for a, b, digest, paired, equal in entry["pairs"]:
            _, _, old_digest, old_paired, old_equal = old_pairs[(a, b)]
            if digest != old_digest:
                differing += 1
                shorter = " SHORTER ALIGNMENT" if equal < old_equal else ""
                print(f"{name} {a[:12]}..{b[:12]}: paired {old_paired} -> {paired}, equal {old_equal} -> {equal}{shorter}")
        print(f"{name}: paired {old[name]['paired']} -> {entry['paired']}, equal {old[name]['equal']} -> {entry['equal']}, "
              f"cpu {old[name]['cpu_s']} -> {entry['cpu_s']} s")
    print(f"{differing} pair diffs differ" if differing else "identical segments for every pair")
    return differing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--against", type=Path, help="a previous OUT to compare with")
    args = parser.parse_args()
    result = run(args.db.resolve())
    args.out.write_text(json.dumps(result))
    if args.against:
        return 1 if compare(result, json.loads(args.against.read_text())) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
