"""Every answer that names the pass that made a change names the pass that ran (issue 25 §1).

MLIR_ENABLE_DUMP prints each dump *before* its pass, so an op first seen in the dump "before X" was
made by the pass dumped just before it in the same scope. The reference here is worked out from the
log text alone: the banners in order, and the first dump whose text holds the op.
"""

import re
import tarfile

from fastapi.testclient import TestClient

from app.insight.pass_attribution import Dump, pass_that_ran
from app.settings import Settings
from app.web.app import create_app
from tests.conftest import corpus_archive, ingest_paths

BANNER = re.compile(r"^// -----// IR Dump (Before|After) (\S+?):? .*\('builtin\.module' operation")


def _module_dumps(log: str) -> list[tuple[str, str, str]]:
    """(when, pass, text) of each module-scope MLIR dump, in log order."""
    dumps, current = [], None
    for line in log.splitlines():
        match = BANNER.match(line)
        if match:
            current = [match.group(1).lower(), match.group(2), []]
            dumps.append(current)
        elif line.startswith("// -----//"):
            current = None
        elif current is not None:
            current[2].append(line)
    return [(when, name, "\n".join(lines)) for when, name, lines in dumps]


def test_the_rule():
    dumps = {
        0: Dump("before", "Inliner", "mlir", None),
        1: Dump("before", "TritonGPUAccelerateMatmul", "mlir", 0),
        2: Dump("before", "TritonNvidiaGPUCheckMatmulTwoCTAPass", "mlir", 1),
        3: Dump("before", "TritonGPUPipeline", "mlir", 2),
        4: Dump("after", "ExpandLoops", "internal", 3),
        5: Dump("before", "Canonicalizer", "mlir", 4),
        6: Dump("after", "SCFToControlFlow", "mlir", 5),
    }
    assert pass_that_ran(dumps, 0) is None  # the first dump: the front end's IR
    assert pass_that_ran(dumps, 2) == "TritonGPUAccelerateMatmul"
    assert pass_that_ran(dumps, 4) == "ExpandLoops"  # an after dump shows its own pass's work
    assert pass_that_ran(dumps, 5) == "TritonGPUPipeline"  # the rest of the pipeliner ran after its last step
    assert pass_that_ran(dumps, 6) == "SCFToControlFlow"


def test_first_seen_and_op_search_name_the_pass_that_ran(db, tmp_path):
    archive = corpus_archive("sm90_mix")
    run = ingest_paths(db, [archive])["run"]
    with tarfile.open(archive) as tar:
        log = tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("dump.log"))).read().decode()
    settings = Settings(db_url=db.url, data_dir=tmp_path, load_demo=False)
    with TestClient(create_app(settings)) as client:
        found = client.get("/search.json", params={"q": "op:ttng.warp_group_dot"}).json()["compilations"]
        assert found
        for item in found:
            assert item["run"] == run
            assert item["first"]["introduced_by"] == "TritonGPUAccelerateMatmul"
            assert item["first"]["pass"] != item["first"]["introduced_by"]
            page = client.get(item["url"]).text
            assert "introduced by <code class=\"small\">TritonGPUAccelerateMatmul</code>" in page
        # every op of every compilation against the log's own order of banners
        compilations = client.get(f"/runs/{run}.json").json()["compilations"]
        checked = 0
        for compilation in compilations:
            twin = client.get(compilation["url"] + ".json").json()
            for entry in twin["first_seen"]:
                if entry["field"] != "op" or not entry["value"].startswith(("tt.", "ttg.", "ttng.")):
                    continue
                first = entry["first"]
                snapshot = twin["snapshots"][first["index"]]
                if snapshot["scope"] not in (None, "builtin.module") or snapshot["kind"] != "mlir":
                    continue
                expected = None
                module_rows = [s for s in twin["snapshots"] if s["scope"] in (None, "builtin.module")
                               and s["kind"] == "mlir"]
                here = next(i for i, s in enumerate(module_rows) if s["index"] == first["index"])
                if here > 0:
                    expected = module_rows[here - 1]["pass"]
                assert first["introduced_by"] == expected, (entry["term"], first)
                checked += 1
        assert checked > 20
        # the log itself agrees on the matmul: the first module dump holding warp_group_dot
        dumps = _module_dumps(log)
        first = next(i for i, (_, _, text) in enumerate(dumps) if "ttng.warp_group_dot" in text)
        assert dumps[first - 1][1] == "TritonGPUAccelerateMatmul"
