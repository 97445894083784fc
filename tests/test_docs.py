"""The README is part of the product: its settings table, CLI options and test command stay true."""

from __future__ import annotations

import argparse
import re

from app.cli import build_parser
from app.settings import settings_table
from tests.conftest import REPO

README = (REPO / "README.md").read_text()


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
