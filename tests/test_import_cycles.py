"""No two modules of app/ and parsers/ import each other, directly or round a longer circle, and no
module imports against the layer order (docs/architecture.md): imports inside functions and under
TYPE_CHECKING count too, since a circle or an upward import there is one of design."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("app", "parsers")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            submodules = {f"{base}.{alias.name}" for alias in node.names} & modules.keys()
            targets.update(submodules)  # `from app.layouts import amd` imports amd, not the package's names
            if len(submodules) < len(node.names):
                targets.add(base)
    return {target for target in targets if target in modules and target != name}


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, name, modules) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_find_cycle_sees_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_of_app_or_parsers_imports_itself_round_a_circle():
    graph = import_graph()
    assert "app.ingest.pipeline" in graph and "app.ingest.state" in graph["app.ingest.linking"]
    assert find_cycle(graph) is None, " → ".join(find_cycle(graph) or [])


def test_parsers_never_import_app():
    graph = import_graph()
    assert not [(name, sorted(targets)) for name, targets in graph.items()
                if name.startswith("parsers") and any(target.startswith("app") for target in targets)]


# Lower layers first. A module may import its own layer and those below it, never one above. A module's
# layer is that of the longest prefix naming it, so parsers' shared modules and registry sit apart from
# its rooms (rooms by input family, any new one included: `parsers` names them all).
LAYERS = (
    ("parsers.records", "parsers.literal_scan", "parsers.json_numbers"),  # shared by every room of parsers/, importing none
    ("parsers",),  # the rooms by input family (parsers/logs/, parsers/caches/, ...)
    ("parsers.registry",),  # the one list of formats: reads the rooms, none reads it
    ("app.layouts", "app.highlight", "app.diff", "app.urls", "app.helper_process", "app.foreground"),
    ("app.store",),
    ("app.settings", "app.render"),
    ("app.insight", "app.replay"),
    ("app.ingest",),
    ("app.web",),
    ("app.cli",),
)


def layer_of(module: str) -> int:
    matches = [(len(prefix), rank) for rank, prefixes in enumerate(LAYERS) for prefix in prefixes
               if module == prefix or module.startswith(prefix + ".")]
    if not matches:
        raise AssertionError(f"{module} belongs to no layer: add it to LAYERS (or to a room)")
    return max(matches)[1]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import from a module of a lower layer into a higher one, as 'low -> high'."""
    return sorted(f"{name} -> {target}" for name, targets in graph.items() for target in targets
                  if target != "app" and layer_of(target) > layer_of(name))


def test_upward_imports_sees_a_violation():
    assert upward_imports({"app.store.blobs": {"app.web.page_cache"}, "app.web.page_cache": set()}) == [
        "app.store.blobs -> app.web.page_cache"]
    assert upward_imports({"app.web.app": {"app.store.db"}, "app.store.db": set()}) == []
    assert upward_imports({"parsers.logs.log": {"parsers.registry", "parsers.records"},
                           "parsers.records": {"parsers.logs.scopes"}}) == [
        "parsers.logs.log -> parsers.registry", "parsers.records -> parsers.logs.scopes"]
    assert upward_imports({"parsers.registry": {"parsers.caches.cache"},
                           "parsers.cute.keep": {"parsers.records"},
                           "parsers.locations.mlir": {"parsers.locations.frames"}}) == []


def test_no_module_imports_against_the_layer_order():
    graph = import_graph()
    assert upward_imports(graph) == []


def test_app_shows_its_rooms():
    """At most 12 modules directly in app/; every room says its job and what it may import."""
    top = [path for path in (ROOT / "app").glob("*.py")]
    assert len(top) <= 12, sorted(path.name for path in top)
    for init in (ROOT / "app").glob("*/__init__.py"):
        docstring = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "import" in docstring, f"{init.parent.name}: its docstring must say what it may import"


PARSERS = ROOT / "parsers"


def room_of(module: str) -> str:
    """`parsers.logs.log` -> `parsers.logs`; a module directly in parsers/ is a room of its own."""
    parts = module.split(".")
    return ".".join(parts[:2])


def room_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    rooms: dict[str, set[str]] = {}
    for name, targets in graph.items():
        if name.startswith("parsers."):
            rooms.setdefault(room_of(name), set()).update(
                room_of(target) for target in targets
                if target.startswith("parsers.") and room_of(target) != room_of(name))
    return rooms


def test_room_graph_sees_a_circle_between_rooms():
    rooms = room_graph({"parsers.logs.log": {"parsers.caches.cache"}, "parsers.caches.cache": set(),
                        "parsers.caches.sass": {"parsers.logs.scopes"}, "parsers.logs.scopes": set()})
    assert find_cycle(rooms) == ["parsers.caches", "parsers.logs", "parsers.caches"]


def test_no_two_rooms_of_parsers_import_each_other():
    """Rooms may lean on one another (traces read a cache's metadata), in one direction only."""
    rooms = room_graph(import_graph())
    assert {"parsers.logs", "parsers.caches", "parsers.traces", "parsers.registry"} <= rooms.keys()
    assert "parsers.caches" in rooms["parsers.traces"]
    assert find_cycle(rooms) is None, " → ".join(find_cycle(rooms) or [])


def test_parsers_shows_its_rooms():
    """parsers/ holds rooms by input family and a few shared modules; every room says its job and
    what it may import (never app/)."""
    top = sorted(path.name for path in PARSERS.glob("*.py"))
    assert len(top) <= 8, f"{top}: a new format goes into the room of its input family"
    inits = sorted(PARSERS.glob("*/__init__.py"))
    assert {init.parent.name for init in inits} >= {"logs", "caches", "traces", "profiles", "autotuning",
                                                      "inputs", "locations"}
    for init in inits:
        docstring = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "import" in docstring and "app/" in docstring, (
            f"parsers/{init.parent.name}: its docstring must say what it may import (and that app/ is not)")
