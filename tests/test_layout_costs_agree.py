"""The snapshot page and the layout inspector give the same cost for every conversion (issue 25 §3):
the draw link carries the tensor's element type as the IR writes it, pointers cost 64 bits, and the
inspector refuses to cost a conversion whose element type it is not given."""

from fastapi.testclient import TestClient

from app.settings import Settings
from app.web.app import create_app
from tests.conftest import corpus_archive, ingest_paths


def test_every_conversion_costs_the_same_on_both_pages(db, tmp_path):
    run = ingest_paths(db, [corpus_archive("sm90_mix")])
    settings = Settings(db_url=db.url, data_dir=tmp_path, load_demo=False)
    checked, pointers = 0, 0
    with TestClient(create_app(settings)) as client:
        for compilation in run["compilations"]:
            twin = client.get(compilation["url"] + ".json").json()
            for snapshot in twin["snapshots"]:
                if not snapshot["stage"] or snapshot["stage"] != "ttgir":
                    continue
                data = client.get(snapshot["url"] + ".json").json()
                for cvt in data.get("conversions") or []:
                    params = {"attr": cvt["src"], "to": cvt["dst"], "shape": "x".join(map(str, cvt["shape"])),
                              "elem": cvt["dtype"], "target": cvt["target"] or ""}
                    answer = client.get("/-/layout.json", params=params)
                    assert answer.status_code == 200, (params, answer.text)
                    got = answer.json()["conversion"]
                    assert (got["kind"], got["scratch_bytes"], got["element_bits"]) == (
                        cvt["kind"], cvt["scratch_bytes"], cvt["element_bits"]), params
                    pointers += cvt["dtype"].startswith("!tt.ptr")
                    assert cvt["element_bits"] == 64 or not cvt["dtype"].startswith("!tt.ptr")
                    checked += 1
        assert checked >= 10 and pointers >= 1, (checked, pointers)
        missing = client.get("/-/layout.json", params={"attr": params["attr"], "to": params["to"],
                                                        "shape": params["shape"]})
        assert missing.status_code == 400 and "element type" in missing.text
