"""Issue 24: each module of parsers/ does one job, and none grows past 600 lines (split it by job).
Issue 37: the same for every room of parsers/ (the whole tree), and no class past 300 lines."""

import ast
from pathlib import Path

PARSERS = Path(__file__).resolve().parent.parent / "parsers"
LIMIT = 600
CLASS_LIMIT = 300


def test_no_parser_module_is_over_600_lines():
    sizes = {str(path.relative_to(PARSERS)): len(path.read_text().splitlines())
             for path in PARSERS.rglob("*.py")}
    assert len(sizes) > 30 and "logs/log.py" in sizes  # the rooms are walked, not only the top
    assert {name: lines for name, lines in sizes.items() if lines > LIMIT} == {}


def test_no_parser_class_is_over_300_lines():
    big = {}
    for path in PARSERS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > CLASS_LIMIT:
                big[f"{path.relative_to(PARSERS)}:{node.name}"] = node.end_lineno - node.lineno + 1
    assert big == {}
