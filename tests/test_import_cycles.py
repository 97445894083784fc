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


# Lower layers first. A module may import its own layer and those below it, never one above.
LAYERS = (
    ("parsers",),
    ("app.layouts", "app.highlight", "app.diff", "app.urls", "app.helper_process"),
    ("app.store",),
    ("app.settings", "app.render"),
    ("app.insight", "app.replay"),
    ("app.ingest",),
    ("app.web",),
    ("app.cli",),
)


def layer_of(module: str) -> int:
    for rank, prefixes in enumerate(LAYERS):
        if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes):
            return rank
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS (or to a room)")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import from a module of a lower layer into a higher one, as 'low -> high'."""
    return sorted(f"{name} -> {target}" for name, targets in graph.items() for target in targets
                  if target != "app" and layer_of(target) > layer_of(name))


def test_upward_imports_sees_a_violation():
    assert upward_imports({"app.store.blobs": {"app.web.page_cache"}, "app.web.page_cache": set()}) == [
        "app.store.blobs -> app.web.page_cache"]
    assert upward_imports({"app.web.app": {"app.store.db"}, "app.store.db": set()}) == []


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
