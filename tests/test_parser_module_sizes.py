"""Issue 24: each module of parsers/ does one job, and none grows past 600 lines (split it by job)."""

from pathlib import Path

PARSERS = Path(__file__).resolve().parent.parent / "parsers"
LIMIT = 600


def test_no_parser_module_is_over_600_lines():
    sizes = {str(path.relative_to(PARSERS)): len(path.read_text().splitlines()) for path in PARSERS.rglob("*.py")}
    assert {name: lines for name, lines in sizes.items() if lines > LIMIT} == {}
