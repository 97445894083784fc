"""Module dumps against the software pipeliner's internal dumps (sm90_mix): the diff compares like with
like and says so, and op history marks the internal dumps "not followed" instead of inventing a removal.

The reference for the diff is independent of app/diff: both texts normalised by a plain procedure here
(locations and alias lines dropped, aliases replaced textually, every value name erased), then
difflib's line diff; the lines the page reports as changed must be the lines that reference changes.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from app.store.db import Database
from app.web.app import create_app
from tests.conftest import corpus_archive, fresh_db_url, ingest_paths


@pytest.fixture(scope="module")
def mix(tmp_path_factory):
    archive = corpus_archive("sm90_mix")
    tmp_path = tmp_path_factory.mktemp("print-forms")
    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        run = ingest_paths(database, [archive])
    finally:
        database.dispose()
    with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp_path))) as client:
        yield client, run


def _compilations(client, run):
    """(compilation, snapshots) of each compilation with pipeliner-internal dumps."""
    for compilation in run["compilations"]:
        detail = client.get(compilation["url"] + ".json").json()
        snapshots = detail["snapshots"]
        if any(s["kind"] == "internal" for s in snapshots):
            yield compilation, snapshots


def _reference(text: str) -> list[str]:
    """A plain normalisation: no loc, aliases written out, values unnamed, alias lines dropped."""
    aliases = {}
    kept = []
    for line in text.split("\n"):
        alias = re.match(r"(#\w+) = (#\w+\.\w+.*)$", line)
        if alias and not line.startswith("#loc"):
            aliases[alias.group(1)] = alias.group(2)
        elif not line.startswith("#loc") and line.strip():
            kept.append(line)
    out = []
    for line in kept:
        while " loc(" in line:  # innermost-first removal handles nested loc(callsite(...))
            new = re.sub(r" loc\((?:[^()]|\([^()]*\))*\)", "", line)
            new = re.sub(r" loc\([^()]*\)", "", new)
            if new == line:
                break
            line = new
        for _ in range(4):  # nested aliases (#ttg.dot_op<{parent = #mma}>)
            line = re.sub(r"#\w+(?![\w.])", lambda m: aliases.get(m.group(), m.group()), line)
        out.append(re.sub(r"%[\w$.-]+|\^bb\d+", "%", line).rstrip())
    return out


def _reference_changes(a_text: str, b_text: str) -> tuple[int, int]:
    """(A lines, B lines) that difflib does not match after the plain normalisation."""
    a, b = _reference(a_text), _reference(b_text)
    matched = sum(m.size for m in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
    return len(a) - matched, len(b) - matched


def _lower_bound(a_text: str, b_text: str) -> tuple[int, int]:
    """Lines of each side with no equal line on the other (as multisets): any diff shows them."""
    a, b = Counter(_reference(a_text)), Counter(_reference(b_text))
    return sum((a - b).values()), sum((b - a).values())


def test_diff_into_internal_dumps_shows_only_real_changes(mix):
    client, run = mix
    checked = 0
    for compilation, snapshots in _compilations(client, run):
        first_internal = next(k for k, s in enumerate(snapshots) if s["kind"] == "internal")
        last_internal = max(k for k, s in enumerate(snapshots) if s["kind"] == "internal")
        pairs = [(first_internal - 1, first_internal), (last_internal, last_internal + 1)]
        for a_pos, b_pos in pairs:
            a, b = snapshots[a_pos], snapshots[b_pos]
            assert {a["kind"], b["kind"]} == {"mlir", "internal"}
            a_text, b_text = client.get(a["raw_url"]).text, client.get(b["raw_url"]).text
            a_id, b_id = a["id"], b["id"]
            data = client.get(f"/diff/{a_id}..{b_id}.json").json()
            stats = data["stats"]
            ref_a, ref_b = _reference_changes(a_text, b_text)
            # what the user reads: lines of A shown removed or changed, lines of B added or changed
            shown = (stats["removed"] + stats["changed_lines"], stats["added"] + stats["changed_lines"])
            where = (compilation["kernel"], a["pass"], b["pass"], shown, (ref_a, ref_b))
            bound = _lower_bound(a_text, b_text)
            assert shown[0] >= bound[0] and shown[1] >= bound[1], where
            if b["kind"] == "internal":  # into the pipeliner: exactly the reference's changes
                assert shown == (ref_a, ref_b), where
            else:
                # out of it (TritonGPUPipeline's own rewrite: attributes dropped, loops re-formed): a
                # changed region where operands stop mapping one to one shows a few more lines than
                # difflib's text-only reference; never the whole function
                assert ref_a <= shown[0] <= 1.3 * ref_a and ref_b <= shown[1] <= 1.3 * ref_b, where
            assert len(data["notes"]) == 1 and "aliases expanded" in data["notes"][0]
            page = client.get(f"/diff/{a_id}..{b_id}").text
            assert "aliases expanded on both sides" in page
            checked += 1
    assert checked == 2 * 6  # the six kernels of sm90_mix, into and out of the pipeliner's dumps


def test_same_form_diffs_carry_no_note(mix):
    client, run = mix
    _, snapshots = next(_compilations(client, run))
    mlir = [s for s in snapshots if s["kind"] == "mlir"]
    a_id, b_id = mlir[10]["id"], mlir[11]["id"]
    assert client.get(f"/diff/{a_id}..{b_id}.json").json()["notes"] == []


def test_history_never_reports_a_removal_across_internal_dumps(mix):
    client, run = mix
    followed = 0
    for compilation, snapshots in _compilations(client, run):
        base = compilation["url"]
        before = next(k for k, s in enumerate(snapshots) if snapshots[k + 1]["kind"] == "internal")
        index = snapshots[before]["index"]
        text = client.get(snapshots[before]["raw_url"]).text
        lines = [
            n for n, code in enumerate(text.split("\n"), start=1) if re.match(r"\s+%\S+ = \w+\.\w+", code)
        ]
        for line in lines[:: max(1, len(lines) // 5)]:
            data = client.get(f"{base}/history.json", params={"s": index, "line": line}).json()
            if data["problem"]:
                continue
            timeline = {entry["index"]: entry for entry in data["timeline"]}
            for s in snapshots:
                entry = timeline[s["index"]]
                if s["kind"] == "internal":
                    assert entry["untracked"] and entry["untracked_reason"] == "no locations"
                    assert entry["event"] is None
            after = timeline[snapshots[before + 1]["index"]]
            assert after["untracked"]
            # the first snapshot followed after the internal dumps compares with the one before them
            resumed = next(timeline[s["index"]] for s in snapshots[before + 1 :] if s["kind"] == "mlir")
            if resumed["count"]:  # the op is there after the pipeliner: nothing removed it
                assert resumed["event"] != "removed"
            if resumed["event"]:
                assert resumed["by"] == snapshots[before]["pass"]
            assert "SoftwarePipeliner" not in str([e.get("by") for e in data["timeline"]])
            followed += 1
            picked = line
        page = client.get(f"{base}/history", params={"s": index, "line": picked}).text
        assert "no locations: not followed" in page
    assert followed >= 10
