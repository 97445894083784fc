"""app/render/ on real Triton output: highlighting, locations, layouts, hardware ops, caching."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import select

from app import render
from app.store.blobs import BlobReader
from app.store.models import Compilation, Snapshot
from tests.conftest import FIXTURES, corpus_archive, ingest_paths

LOC_FIXTURES = FIXTURES / "loc"
TAG = re.compile(r"<[^>]+>")


def rendered_file(name: str, kind: str) -> render.Rendered:
    path = LOC_FIXTURES / name
    text = path.read_text()
    return render.render_ir(f"test:{name}:{kind}", kind, lambda: text)


def line_html(rendered: render.Rendered, number: int) -> str:
    return rendered.lines[number - 1]


def visible_text(html: str) -> str:
    """What a line shows with locations hidden: its code minus the .lc spans, tags stripped."""
    code = html.split('<span class="code">', 1)[1]
    code = re.sub(r'<span class="lc">.*?</span></span>', "", code)
    return TAG.sub("", code).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def gutter(html: str) -> str:
    match = re.search(r'<span class="gtr[^"]*"[^>]*>([^<]*)</span>', html)
    assert match is not None
    return match.group(1)


@pytest.fixture(autouse=True)
def fresh_caches():
    render.clear_caches()
    yield
    render.clear_caches()


def test_every_line_becomes_one_anchored_row():
    text = (LOC_FIXTURES / "add_kernel.ttgir").read_text()
    rendered = rendered_file("add_kernel.ttgir", "mlir")
    assert rendered.line_count == len(text.rstrip("\n").split("\n"))
    for number, html in enumerate(rendered.lines, start=1):
        assert html.startswith('<div class="ln') and f'id="L{number}"' in html
        assert f'<a class="nr" href="#L{number}">{number}</a>' in html


def test_locations_are_wrapped_so_they_can_be_hidden_and_shown():
    rendered = rendered_file("add_kernel.ttgir", "mlir")
    pid_line = line_html(rendered, 10)  # %pid = tt.get_program_id x : i32 loc(#loc17)
    assert '<span class="lc"> <span class="cs">loc(#loc17)</span></span>' in pid_line
    assert visible_text(pid_line).rstrip() == "    %pid = tt.get_program_id x : i32"
    # `#loc = loc("...":14:1)` alias definitions are whole location lines, hidden with the locs
    assert 'class="ln locdef"' in line_html(rendered, 2)
    assert "locdef" not in line_html(rendered, 10)
    hidden = [html for html in rendered.lines if "locdef" in html]
    assert hidden and all("#loc" in TAG.sub("", html) for html in hidden)
    assert rendered.loc_tokens > 0


def test_gutter_shows_the_primary_frame_as_basename_and_line():
    rendered = rendered_file("add_kernel.ttgir", "mlir")
    pid_line = line_html(rendered, 10)
    assert gutter(pid_line) == "kernels.py:15"  # pid = tl.program_id(axis=0)
    assert 'title="pid @ /home/dev/kernels/kernels.py:15:' in pid_line  # NameLoc name, then the frames
    assert rendered.locs[9].file == "/home/dev/kernels/kernels.py" and rendered.locs[9].line == 15
    assert rendered.loc_files == ["/home/dev/kernels/kernels.py"]
    assert 'data-py="0:15"' in pid_line
    assert f"hl{render.line_colour('/home/dev/kernels/kernels.py', 15)}" in pid_line
    assert 10 in rendered.by_source[("/home/dev/kernels/kernels.py", 15)]
    # a line without a location has an empty gutter
    assert gutter(line_html(rendered, 1)) == ""


def test_python_line_colours_are_stable_and_neighbours_differ():
    file = "/home/dev/kernels/kernels.py"
    assert render.line_colour(file, 15) == render.line_colour("/elsewhere/kernels.py", 15)
    assert render.line_colour(file, 15) != render.line_colour(file, 16)
    assert {render.line_colour(file, line) for line in range(1, 100)} == set(
        range(1, render.PALETTE_SIZE + 1)
    )


def test_layout_aliases_are_coloured_linked_and_explained():
    rendered = rendered_file("add_kernel.ttgir", "mlir")
    blocked = rendered.layouts["blocked"]
    assert blocked.line == 1 and blocked.kind == "blocked"
    explanations = {field.name: field.explanation for field in blocked.fields}
    assert explanations["sizePerThread"] == "each thread holds 4 consecutive elements"
    assert "4 warps" in blocked.summary
    colour = rendered.layout_colours["blocked"]
    load_line = line_html(rendered, 19)  # tt.load ... tensor<1024x!tt.ptr<f32>, #blocked>
    assert f'<a class="ly y{colour}" data-ly="blocked" href="#L1">#blocked</a>' in load_line
    assert 'class="ly y1 def" data-ly="blocked"' in line_html(rendered, 1)
    as_json = rendered.layouts_json()["blocked"]
    assert as_json["definition"].startswith("#ttg.blocked<{sizePerThread = [4]")
    assert any(field["name"] == "order" and field["explanation"] for field in as_json["fields"])


def test_inline_encodings_are_explained_on_their_own(tmp_path: Path):
    text = (
        "#blocked = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>\n"
        "module {\n"
        "  %0 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #ttg.slice<{dim = 1, parent = #blocked}>>\n"
        "}"
    )
    rendered = render.render_ir("test:inline", "mlir", lambda: text)
    assert 'class="nb enc" data-enc="e1">#ttg.slice</span>' in line_html(rendered, 3)
    slice_layout = rendered.encodings["e1"]
    assert slice_layout.kind == "slice"
    assert slice_layout.definition == "#ttg.slice<{dim = 1, parent = #blocked}>"
    assert "dim 1" in slice_layout.summary
    assert "enc" not in line_html(rendered, 1)  # the alias definition is explained by its alias


def test_ir_text_is_always_escaped():
    text = 'module {\n  %0 = "x.op"() {name = "<script>alert(1)</script>"} : () -> i32 loc("<b>&"(#loc))\n}'
    rendered = render.render_ir("test:escape", "mlir", lambda: text)
    html = "".join(rendered.lines)
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;&amp;" in html


def test_ptx_llvm_ir_and_amdgcn_are_highlighted_and_mapped():
    ptx = rendered_file("add_kernel.ptx", "ptx")
    loc_line = next(
        i for i, html in enumerate(ptx.lines, start=1) if ".loc</span>" in html or "\t1 15 11" in html
    )
    assert "locdef" in ptx.lines[loc_line - 1]  # `.loc 1 15 11 // kernels.py:15:11` hides with the locs
    assert gutter(ptx.lines[loc_line - 1]) == "kernels.py:15"
    assert any('<span class="k">ld</span>' in html for html in ptx.lines)
    assert ptx.loc_files == ["/home/dev/kernels/kernels.py"]

    llir = rendered_file("add_kernel.llir", "llir")
    assert gutter(line_html(llir, 7)) == "kernels.py:15"  # ctaid.x read, !dbg !12
    assert gutter(line_html(llir, 8)) == "kernels.py:16"

    amdgcn = rendered_file("add_kernel.gfx942.amdgcn", "amdgcn")
    assert amdgcn.loc_lines > 0
    assert amdgcn.loc_files[0].endswith("kernels.py")


def test_json_artifacts_are_pretty_printed():
    rendered = render.render_ir("test:json", "json", lambda: '{"num_warps": 4, "target": {"arch": 90}}')
    assert rendered.line_count == 6
    assert (
        '<span class="nt">"num_warps"</span><span class="p">:</span> <span class="mi">4</span>'
        in line_html(rendered, 2)
    )
    assert rendered.loc_lines == 0


def test_renders_are_cached_by_blob_hash_and_kind():
    calls = []

    def load() -> str:
        calls.append(1)
        return (LOC_FIXTURES / "add_kernel.ttgir").read_text()

    first = render.analyse_ir("cache-test", "mlir", load)
    assert render.analyse_ir("cache-test", "mlir", load) is first and len(calls) == 1
    lines = render.page_lines(first, 0, 20)
    assert render.page_lines(first, 0, 20) == lines and len(calls) == 1
    assert render.render_ir("cache-test", "mlir", load).lines[:20] == lines and len(calls) == 1
    render.analyse_ir("cache-test", "text", load)
    assert len(calls) == 2  # another kind is another analysis
    assert render.ops_counts("cache-test", load) == first.ops and len(calls) == 2


def test_etags_change_with_the_blob_and_the_variant():
    tag = render.etag("abc", "/runs/x/c/1/s/2")
    assert tag.startswith('"abc.') and tag.endswith('"')
    assert render.etag("abc", "/runs/x/c/1/s/2") == tag
    assert render.etag("abd", "/runs/x/c/1/s/2") != tag
    assert render.etag("abc", "/runs/x/c/1/s/2.json") != tag
    assert render.not_modified(tag, tag) and render.not_modified(f'W/{tag}, "other"', tag)
    assert not render.not_modified('"other"', tag) and not render.not_modified(None, tag)


@pytest.fixture(scope="module")
def sm90_matmul_descriptor(tmp_path_factory):
    """The TMA kernel of sm90_mix: its snapshots' texts by pass index."""
    from app.store.db import Database
    from tests.conftest import fresh_db_url

    database = Database(fresh_db_url(tmp_path_factory.mktemp("render-db")))
    try:
        ingest_paths(database, [corpus_archive("sm90_mix")])
        reader = BlobReader()
        with database.session() as session:
            compilation = session.scalar(
                select(Compilation).where(Compilation.kernel == "matmul_descriptor_kernel")
            )
            snapshots = session.scalars(
                select(Snapshot).where(Snapshot.compilation_pk == compilation.pk)
            ).all()
            yield {
                snapshot.index: (snapshot.pass_name, snapshot.blob, reader.text(session, snapshot.blob))
                for snapshot in snapshots
            }
    finally:
        database.dispose()


def test_tma_lowering_shows_up_as_tma_ops(sm90_matmul_descriptor):
    by_pass = {name: index for index, (name, _, _) in sorted(sm90_matmul_descriptor.items(), reverse=True)}
    lowering = by_pass["TritonNvidiaGPUTMALoweringPass"]
    _, before_blob, before_text = sm90_matmul_descriptor[lowering]
    _, after_blob, after_text = sm90_matmul_descriptor[lowering + 1]
    before = render.render_ir(before_blob, "mlir", lambda: before_text)
    after = render.render_ir(after_blob, "mlir", lambda: after_text)
    assert after.ops["tma"] > before.ops["tma"]
    # the lowering turns tt.make_tensor_descriptor into device-side tensor maps
    created = [html for html in after.lines if "ttng.tensormap_create" in html]
    assert created and all("o-tma" in html and '<i class="hw-tma"></i>' in html for html in created)
    assert not any("ttng.tensormap_create" in html for html in before.lines)
    assert any("tt.make_tensor_descriptor" in html and "o-tma" in html for html in before.lines)
    # the pipelined loads were TMA copies already, and stay marked
    copies = [html for html in after.lines if "ttng.async_tma_copy_global_to_local" in html]
    assert copies and all("o-tma" in html for html in copies)
    assert after.op_lines["tma"] >= len(copies) + len(created)
    # the TMA copy lines map back to the a_desc.load / b_desc.load lines of kernels.py
    first_copy = next(
        i for i, html in enumerate(after.lines) if "ttng.async_tma_copy_global_to_local" in html
    )
    assert after.locs[first_copy] is not None and after.locs[first_copy].file.endswith("kernels.py")


def test_largest_corpus_snapshot_renders_once_then_from_the_cache(sm90_matmul_descriptor):
    _, digest, text = max(sm90_matmul_descriptor.values(), key=lambda snapshot: len(snapshot[2]))
    rendered = render.render_ir(digest, "mlir", lambda: text)
    assert rendered.line_count == len(text.split("\n"))
    assert rendered.large == (rendered.line_count > render.LARGE_SNAPSHOT_LINES)
    assert sum(rendered.chunk_sizes()) == rendered.line_count
    again = render.render_ir(digest, "mlir", lambda: pytest.fail("a cached analysis must not reload the text"))
    assert again.lines == rendered.lines  # from the cached analysis and pages
