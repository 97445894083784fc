"""Every route of the app, walked with hostile path and query values: none may answer 5xx.

The routes come from the app itself (``app.routes``, through included routers), so a route added
later is walked too. Each request starts from a URL that names real rows of a real capture (the
sm90 add_kernel log, its Python source and cache files from tests/fixtures) and spoils one path
parameter, or one number inside it, or the query. Runs on SQLite and, with IRLENS_TEST_DB_URL, on
PostgreSQL: numbers past a database integer's range must be a 404, not an OverflowError.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import tarfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from app.web.app import create_app
from tests.conftest import FIXTURES, REPO, fresh_db_url

HOSTILE = [
    "99999999999999999999999",  # past every integer type
    "9223372036854775808",  # 2**63: one past SQLite's INTEGER
    "2147483648",  # 2**31: one past PostgreSQL's integer
    "-1",
    "-99999999999999999999999",
    "abc",
    "1e9",
    "0x10",
    "\u00b2",  # "²": str.isdigit() says yes, int() says no
    "\u0661\u0662",  # Arabic-Indic digits
    "%00",
    "\x00",
    "..",
    "../../../etc/passwd",
    "",
    " ",
    "1" * 300,  # a 300-digit number
    "\u2460x\u2461",  # "①x②": digits to str.isdigit(), not to int()
    "1e400",  # inf to float()
    "NaN",
]
# Valid values of the query parameters that only mean something together (the layout inspector's
# attr and shape): each is spoiled while the others stay valid, so the code behind the first check runs.
VALID_QUERY = {
    "attr": "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>",
    "shape": "64x128",
    "to": "#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}>",
    "elem": "f16",
    "target": "cuda:90",
}
# the query names the app reads: each route's declared ones, and these read from request.query_params
QUERY_SOURCES = re.compile(r"""(?:query_params|params)\.get\(\s*["'](\w+)["']|number\(\s*["'](\w+)["']""")
MUTATING = {"POST", "PUT", "PATCH", "DELETE"}


def _capture(folder: Path) -> Path:
    """The add_kernel log, its source, and a cache folder holding that kernel's real stage files."""
    loc = FIXTURES / "loc"
    members = {
        "dump.log": gzip.decompress((FIXTURES / "sm90_add_kernel_dump.log.gz").read_bytes()),
        "kernels/kernels.py": (FIXTURES / "triton39_src" / "kernels.py").read_bytes(),
        "cache/ABCDEF/add_kernel.json": json.dumps(
            {"name": "add_kernel", "target": {"backend": "cuda", "arch": 90, "warp_size": 32}, "num_warps": 4}
        ).encode(),
        **{f"cache/ABCDEF/add_kernel.{ext}": (loc / f"add_kernel.{ext}").read_bytes() for ext in ("ttgir", "llir", "ptx")},
        # a PC-sampling profile of the kernel's lines (profile, heat and metric= pages), and hostile
        # profiles beside it: a NaN and a 1e400 (left out, with a warning), random bytes as a report
        "profile.hatchet": _hatchet("12", "3"),
        "nan.hatchet": _hatchet("NaN", "1e400"),
        "report.ncu-rep": bytes(range(256)) * 8,
    }
    path = folder / "capture.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def _hatchet(samples: str, stalled: str) -> bytes:
    lines = ",".join(
        f'{{"frame": {{"name": "/home/dev/kernels/kernels.py:{line}@add_kernel", "type": "function"}}, '
        f'"metrics": {{"num_samples": {samples}, "stalled_wait": {stalled}}}, "children": []}}'
        for line in (15, 16, 20))
    return (
        '[{"frame": {"name": "ROOT", "type": "function"}, "metrics": {}, "children": ['
        '{"frame": {"name": "add_kernel", "type": "function"}, "metrics": {"count": 2, "time (ns)": 900}, '
        f'"children": [{lines}]}}]}}, {{"CUDA": {{"0": {{"arch": "90"}}}}}}]').encode()


def _routes(routes, prefix: str = "") -> Iterator[tuple[str, object]]:
    """(path, route) for every route, through included routers however deep."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            context = getattr(route, "include_context", None)
            yield from _routes(included.routes, prefix + getattr(context, "prefix", ""))
        elif hasattr(route, "path"):
            yield prefix + route.path, route


def _query_names(app_routes) -> list[str]:
    names = {"start", "count", "file", "line", "q", "next", "all", "context", "view"}
    for path in (REPO / "app").rglob("*.py"):
        for match in QUERY_SOURCES.finditer(path.read_text()):
            names.add(match.group(1) or match.group(2))
    for _, route in app_routes:
        dependant = getattr(route, "dependant", None)
        for param in getattr(dependant, "query_params", []):
            names.add(param.alias or param.name)
    return sorted(names)


@pytest.fixture(scope="module")
def walker(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("walk")
    settings = Settings(db_url=fresh_db_url(tmp_path), data_dir=tmp_path, load_demo=False)
    with TestClient(create_app(settings), raise_server_exceptions=False, follow_redirects=False) as client:
        capture = _capture(tmp_path)
        response = client.post("/runs", files={"file": ("capture.tar.gz", capture.read_bytes())})
        assert response.status_code in (200, 201, 303), response.text
        yield client, response.json()["run"]


def _valid_values(client: TestClient, run_id: str) -> dict[str, str]:
    """A value naming a real row for each path parameter name the app uses."""
    run = client.get(f"/runs/{run_id}.json").json()
    compilation = next(c for c in run["compilations"] if c.get("artifacts"))
    detail = client.get(compilation["url"] + ".json").json()
    ordinal = compilation["url"].rsplit("/", 1)[1]
    artifact = detail["files"][0]["url"].rsplit("/files/", 1)[1]
    first, second = detail["snapshots"][0]["id"], detail["snapshots"][1]["id"]
    log = re.search(r"/log/(\d+)", json.dumps(run))
    source = re.search(r"/src/([^\"?]+)", json.dumps(run))
    return {
        "run_id": run_id,
        "ordinal": ordinal,
        "index": "1",
        "artifact_pk": artifact,
        "input_pk": log.group(1) if log else "1",
        "spec": f"{first}..{second}",
        "path": source.group(1) if source else "kernels/kernels.py",
        "name": compilation["kernel"],  # a kernel's history (/kernels/{name})
    }


def _spoiled(valid: str) -> Iterator[str]:
    """Hostile values for one parameter: whole, and in place of each number inside a valid value."""
    yield from HOSTILE
    for match in re.finditer(r"(?<![0-9a-f])\d+(?![0-9a-f])", valid):
        for bad in HOSTILE[:5] + ["\u00b2"]:
            yield valid[: match.start()] + bad + valid[match.end() :]


def _fill(path: str, values: dict[str, str]) -> str:
    def value(match: re.Match) -> str:
        name, _, convertor = match.group(1).partition(":")
        text = values.get(name, "1")
        return quote(text, safe="/.") if convertor == "path" else quote(text, safe=".")

    return re.sub(r"\{([^}]+)\}", value, path)


def _requests(client: TestClient, run_id: str) -> Iterator[tuple[str, str]]:
    """(method, url) pairs: every route, each path parameter spoiled in turn, then hostile queries."""
    routes = list(_routes(client.app.routes))
    assert len(routes) > 20, "the route walk found too few routes"
    valid = _valid_values(client, run_id)
    queries = _query_names(routes)
    for path, route in routes:
        methods = sorted((getattr(route, "methods", None) or {"GET"}) - {"HEAD"})
        names = [name.partition(":")[0] for name in re.findall(r"\{([^}]+)\}", path)]
        if not names and path.startswith("/static"):
            names = ["path"]
            path = "/static/{path:path}"
        for method in methods:
            for name in names:
                for bad in _spoiled(valid.get(name, "1")):
                    yield method, _fill(path, {**valid, name: bad})
            if method in MUTATING:
                continue  # only spoiled URLs for routes that change things: the run must stay
            url = _fill(path, valid)
            # a declared parameter refused with 422 would hide the others: those one at a time
            declared = {param.alias for param in getattr(getattr(route, "dependant", None), "query_params", [])}
            for bad in HOSTILE:
                yield method, url + "?" + urlencode({name: bad for name in queries if name not in declared})
                for name in sorted(declared):
                    yield method, url + "?" + urlencode({name: bad})
                    together = {key: value for key, value in VALID_QUERY.items() if key in declared}
                    if name in together:
                        yield method, url + "?" + urlencode({**together, name: bad})


def test_no_route_answers_5xx_to_hostile_values(walker):
    client, run_id = walker
    failures, statuses = [], set()
    for method, url in dict.fromkeys(_requests(client, run_id)):  # each distinct request once
        response = client.request(method, url)
        statuses.add(response.status_code)
        if response.status_code >= 500:
            failures.append(f"{method} {url[:160]} -> {response.status_code}: {response.text[:200]}")
    assert not failures, f"{len(failures)} requests got 5xx:\n" + "\n".join(failures[:40])
    assert 404 in statuses and 200 in statuses  # the walk both missed and reached real rows
    assert client.get(f"/runs/{run_id}.json").status_code == 200  # nothing deleted it


@pytest.mark.parametrize(
    "url",
    [
        "/runs/{run}/c/99999999999999999999999",
        "/runs/{run}/c/99999999999999999999999.json",
        "/runs/{run}/c/1/s/99999999999999999999999",
        "/runs/{run}/c/1/files/99999999999999999999999",
        "/runs/{run}/c/1/files/9223372036854775808/view",
        "/runs/{run}/log/99999999999999999999999",
        "/diff/{run}-1-99999999999999999999999..{run}-1-0",
        "/diff/{run}-1-0..{run}-99999999999999999999999-1.json",
        "/runs/{run}/c/\u00b2",
        "/runs/{run}/c/1/s/99999999999999999999999/reproducer.mlir",
        "/runs/{run}/c/1/s/9223372036854775808/reproducer.py",
        "/runs/{run}/c/99999999999999999999999/s/1/replay",
        "/runs/{run}/c/1/s/2147483648/replay.json",
    ],
)
def test_out_of_range_numbers_are_404(walker, url):
    client, run_id = walker
    assert client.get(url.format(run=run_id)).status_code == 404


@pytest.mark.parametrize(
    "url",
    [
        "/kernels/add_kernel.json?order=label:" + "x" * 100,
        "/kernels/add_kernel.json?order=label:%00&limit=99999999999999999999999",
        "/kernels/add_kernel?limit=-1&order=label:triton",
        "/kernels/add_kernel.json?limit=0",
        "/kernels.json?q=%25%5F%5C%00" + "a" * 2000,
        "/kernels/" + "k" * 600 + ".json",
        "/kernels/%00.json",
        "/kernels/a%2Fb%2F..%2F..",
        "/runs/{run}/check.json?baseline=label:%22%27%25=%00",
        "/runs/{run}/check.json?baseline=" + "9" * 400 + "&fail_on=spills,,%00",
        "/runs/{run}/check?baseline=label:=&format=markdown",
        "/runs/nosuchrun/check.json",
    ],
)
def test_kernel_history_routes_refuse_hostile_values_without_5xx(walker, url):
    client, run_id = walker
    assert client.get(url.format(run=run_id)).status_code < 500


def _strict(text: str):
    def refuse(name: str):
        raise ValueError(f"{name} in a JSON answer")
    return json.loads(text, parse_constant=refuse)


def test_hostile_profiles_beside_a_capture_lose_nothing_else(walker):
    client, run_id = walker
    run = _strict(client.get(f"/runs/{run_id}.json").text)
    (compilation,) = [c for c in run["compilations"] if c.get("artifacts")]
    assert compilation["kernel"] == "add_kernel" and compilation["snapshots"]
    assert [p["path"] for p in run["profiles"]] == ["capture.tar.gz/profile.hatchet", "capture.tar.gz/nan.hatchet"]
    assert run["profiles"][0]["kernels"][0]["compilation"] == compilation["url"]
    warned = {(w.get("path"), w["message"]) for w in run["warnings"]}
    assert any(path == "capture.tar.gz/nan.hatchet" and "not finite or out of range (1e400, NaN)" in message
               for path, message in warned), warned
    assert any(path == "capture.tar.gz/report.ncu-rep" and "not an Nsight Compute report" in message
               for path, message in warned), warned
    detail = _strict(client.get(compilation["url"] + ".json").text)
    assert detail["resources"] is None or isinstance(detail["resources"], dict)


@pytest.mark.parametrize("path", ["/-/layout", "/-/layout.json"])
@pytest.mark.parametrize("shape", ["\u2460x\u2461", "\u00b2x4", "64x" + "9" * 5000, "\u0661\u0662x4"])
def test_layout_shape_of_unicode_digits_is_refused_not_500(walker, path, shape):
    client, _ = walker
    response = client.get(path, params={"attr": VALID_QUERY["attr"], "shape": shape})
    assert response.status_code == 400 and "is not like 64x128" in response.text


@pytest.mark.parametrize("field, value", [("target", "cuda:\u2460"), ("lead", "\u2460,0"), ("lead", "9" * 5000 + ",0")])
def test_layout_other_fields_of_unicode_digits_are_not_500(walker, field, value):
    client, _ = walker
    response = client.get("/-/layout", params={**VALID_QUERY, field: value})
    assert response.status_code < 500


BLOCKED = "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
SHARED_VALUES = [
    "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>",
    "#ttg.swizzled_shared<{vec = 0, perPhase = 0, maxPhase = 0, order = [1, 0]}>",
    "#ttg.swizzled_shared<{vec = 99999999999999999999999, perPhase = 1, maxPhase = 8, order = [1, 0]}>",
    "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [7, 0]}>",
    "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>",
    "#ttg.nvmma_shared<{swizzlingByteWidth = 3, transposed = maybe, elementBitWidth = -1}>",
    "#ttg.padded_shared<[64:+4] {order = [1, 0], shape = [64, 64]}>",
    "#ttg.padded_shared<[0:+0] {order = [1, 0], shape = [64, 64]}>",
    "#ttg.shared_linear<{offset = [[0, 3], [1, 0]]}>",
    "#ttg.shared_linear<{offset = []}>",
]


def test_bank_conflict_and_remark_queries_never_5xx(walker):
    """The values issue 36 added: a (distributed, shared) pair's `to`, with hostile shared encodings,
    element types, targets and shapes; `remark:` searches and completions."""
    client, _ = walker
    failures = []
    urls = []
    for shared in SHARED_VALUES + HOSTILE:
        for elem in ("f16", "f64", "i1", "f8E4M3FN", "!tt.ptr<f16>", "", "x" * 300, "\x00", "f0", "i99999999999"):
            urls.append("/-/layout.json?" + urlencode({"attr": BLOCKED, "shape": "64x64", "elem": elem, "to": shared}))
        for target in ("hip:gfx942", "cuda:90", "cuda:", "\x00", "9" * 40):
            urls.append("/-/layout?" + urlencode({"attr": BLOCKED, "shape": "64x64", "elem": "f16", "to": shared,
                                                  "target": target}))
        urls.append("/-/layout?" + urlencode({"attr": shared, "shape": "64x64", "elem": "f16", "to": BLOCKED}))
    for shape in HOSTILE + ["1x1", "2x2", "65536x65536", "64x64x64"]:
        urls.append("/-/layout.json?" + urlencode({"attr": BLOCKED, "shape": shape, "elem": "f32", "to": SHARED_VALUES[0]}))
    for value in HOSTILE + ['"', '""', "%", "_", "\\", "remark:", "pipelin kernel:\x00"]:
        for path in ("/search", "/search.json", "/search/suggest", "/search/suggest.json"):
            urls.append(path + "?" + urlencode({"q": f"remark:{value}"}))
        urls.append("/search.json?" + urlencode({"q": f"remark:{value} op:tt.load tag:{value}"}))
    for url in urls:
        response = client.get(url)
        if response.status_code >= 500:
            failures.append(f"{url[-200:]} -> {response.status_code}: {response.text[:200]}")
    assert not failures, f"{len(failures)} requests got 5xx:\n" + "\n".join(failures[:40])
    good = client.get("/-/layout.json?" + urlencode({"attr": BLOCKED, "shape": "64x64", "elem": "f16",
                                                     "to": SHARED_VALUES[0]}))
    assert good.status_code == 200 and good.json()["bank_conflicts"] == 0
