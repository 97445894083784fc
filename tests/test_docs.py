"""The README and docs/ are part of the product: the settings table, CLI options and test command stay
true, every link and every path into the code leads somewhere, and the README stays short."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from app.cli import build_parser
from app.settings import settings_table
from tests.conftest import REPO

README = (REPO / "README.md").read_text()
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# [text](target) and ![alt](target); the target ends at a space (a title) or the closing parenthesis.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)")
# A path into the repository's code as the docs write it: `app/store/blobs.py`, `app/web/views/*.py`.
CODE_PATH = re.compile(r"(?<![\w./-])((?:app|parsers|tests|bench|templates|static|migrations|\.ci)/[\w./*-]*)")


def relative_links(text: str) -> list[str]:
    """The targets of a Markdown text's links and images that point into the repository (no scheme,
    no bare #anchor), without their #anchor."""
    targets = [match.group(1) for match in LINK.finditer(text)]
    return [target.split("#")[0] for target in targets
            if not re.match(r"[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")]


def test_readme_settings_table_matches_the_settings_class():
    table = re.search(r"<!-- settings-table -->\n.*?\n\n(.*?)\n<!-- /settings-table -->", README, re.DOTALL)
    assert table, "the README lost its settings table markers"
    # Regenerate with: python -c "from app.settings import settings_table; print(settings_table())"
    assert table.group(1) == settings_table()


def test_every_cli_command_and_option_is_in_the_readme():
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, subparser in commands.choices.items():
        assert f"irlens {name}" in README, f"`irlens {name}` is not documented"
        for action in subparser._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help":
                    assert option in README, f"`irlens {name} {option}` is not documented"


def test_ci_runs_the_readme_test_command():
    blocks = re.findall(r"```sh\n(.*?)\n```", README, re.DOTALL)
    run_command, test_command = blocks[0], blocks[1]
    assert "irlens serve" in run_command and "pytest" in test_command
    assert test_command in (REPO / ".ci" / "run").read_text()


def test_relative_links_sees_files_not_urls():
    text = "[a](docs/x.md#top) ![b](docs/img/y.png) [c](https://e.org/z) [d](#here) [e](../README.md \"t\")"
    assert relative_links(text) == ["docs/x.md", "docs/img/y.png", "../README.md"]


def test_every_relative_link_in_the_docs_leads_to_a_file():
    assert len(DOCS) > 1, "docs/*.md went missing"
    broken = [f"{doc.relative_to(REPO)}: {target}" for doc in DOCS for target in relative_links(doc.read_text())
              if not (doc.parent / target).exists()]
    assert broken == []


def test_every_code_path_in_the_docs_exists():
    """Modules move (app/ was grouped into rooms): a doc naming `app/db.py` after it became
    `app/store/db.py` fails here."""
    missing = []
    for doc in DOCS:
        for match in CODE_PATH.finditer(doc.read_text()):
            path = match.group(1).rstrip(".,;:)")
            if not list(REPO.glob(path)) and not Path(REPO, path).exists():
                missing.append(f"{doc.relative_to(REPO)}: {path}")
    assert missing == []


def test_readme_is_short_enough_to_read_to_the_end():
    assert len(README.splitlines()) <= 250
