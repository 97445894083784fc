"""Per-pass charts: shown on every compilation page of the corpus, one point per snapshot, and the
passes that blow the IR up or shrink it marked; the measures cross-checked line by line."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from sqlalchemy import select

from app.insight.pass_charts import BLOWUP_RATIO, MIN_LINES_DELTA, element_bits, measure, outliers
from app.settings import Settings
from app.store.blobs import BlobReader
from app.store.models import Banner, Compilation, Snapshot
from app.web.app import create_app

_SPARK = re.compile(r'<svg class="spark"')
_HIT = re.compile(r'class="spark-hit"')


def test_charts_show_on_every_compilation_page_of_the_corpus(session_db, corpus_runs, tmp_path):
    settings = Settings(db_url=session_db.url, data_dir=tmp_path, load_demo=False)
    pages = flagged = 0
    with TestClient(create_app(settings)) as client:
        for summary in corpus_runs.values():
            for compilation in summary["compilations"]:
                data = client.get(compilation["url"] + ".json").json()
                count = len(data["snapshots"])
                page = client.get(compilation["url"]).text
                if not count:
                    assert 'class="pass-charts"' not in page
                    continue
                pages += 1
                series = {item["key"]: item["values"] for item in data["charts"]["series"]}
                assert series["lines"] == [row["lines"] for row in data["snapshots"]]
                assert all(len(values) == count for values in series.values())
                assert {"convert_layout", "allocs", "alloc_bytes", "barriers"} <= set(series)
                assert ("ms" in series) == any(row["ms"] is not None for row in data["snapshots"])
                charts = len(_SPARK.findall(page))
                assert charts == len(series)
                assert len(_HIT.findall(page)) == charts * count  # every pass of every chart links
                for item in data["charts"]["outliers"]:
                    old, new = item["from"], item["to"]
                    assert abs(new - old) >= MIN_LINES_DELTA
                    assert new >= old * BLOWUP_RATIO or new * BLOWUP_RATIO <= old
                    assert f'id="s{item["index"]}"' in page
                    flagged += 1
                assert page.count("tr class=\"pass") == count
                assert page.count(" outlier\"") == len(data["charts"]["outliers"])
    assert pages > 30
    assert flagged > 0  # the corpus has lowering passes that multiply the line count


def test_outliers_rule():
    rows = [{"index": i, "pass": f"P{i}", "lines": n, "url": f"/s/{i}"} for i, n in
            enumerate([100, 110, 400, 400, 100, 90, 10])]
    found = outliers(rows)
    assert [(o["index"], o["pass"], o["kind"]) for o in found] == [
        (2, "P1", "grew"), (4, "P3", "shrank"), (6, "P5", "shrank")]


def test_measures_agree_with_a_line_by_line_count(session_db, corpus_runs):
    reader = BlobReader()
    checked_allocs = 0
    with session_db.session() as session:
        blobs = session.scalars(
            select(Snapshot.blob).join(Compilation, Compilation.pk == Snapshot.compilation_pk)
            .join(Snapshot.banner).where(Banner.kind == "mlir").distinct().limit(400)
        )
        for blob in blobs:
            text = reader.text(session, blob) or ""
            got = measure(text.encode())
            converts = allocs = alloc_bytes = 0
            for line in text.split("\n"):
                rest = line.lstrip(" ")
                if rest.startswith("%"):
                    rest = rest.partition("= ")[2]
                op = rest.split(" ", 1)[0].strip('"')
                if op.endswith(".convert_layout"):
                    converts += 1
                if op in ("ttg.local_alloc", "triton_gpu.local_alloc"):
                    allocs += 1
                    memdesc = line.rsplit("memdesc<", 1)
                    if len(memdesc) == 2:
                        *dims, element = memdesc[1].split(",", 1)[0].split("x")
                        size = 1
                        for dim in dims:
                            size *= int(dim)
                        alloc_bytes += size * element_bits(element.strip("> ")) // 8
            assert (got.convert_layout, got.allocs, got.alloc_bytes) == (converts, allocs, alloc_bytes), blob
            checked_allocs += allocs
    assert checked_allocs > 0


def test_element_bits():
    assert [element_bits(name) for name in ("f16", "bf16", "f32", "f8E4M3FN", "i1", "i64", "f4E2M1FN")] == [
        16, 16, 32, 8, 8, 64, 4]
