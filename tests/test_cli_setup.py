"""Team setup from a shell: a PostgreSQL URL without its driver, and `irlens serve --get`'s stderr.

Both run the real command in a child process, as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from app.store.db import DriverMissing, database_url, make_engine
from tests.conftest import REPO, fresh_db_url

# Runs app.cli's main with the psycopg package made unimportable, as on a machine that installed
# irlens without its `postgres` extra.
WITHOUT_PSYCOPG = textwrap.dedent(
    """
    import sys

    class NoPsycopg:
        def find_spec(self, name, path=None, target=None):
            if name == "psycopg" or name.startswith("psycopg."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoPsycopg())
    from app.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


def run_cli(args: list[str], code: str | None = None, **env: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "app.cli", *args]
    environment = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "IRLENS_LOAD_DEMO": "false", **env}
    return subprocess.run(command, check=False, capture_output=True, text=True, cwd=REPO, env=environment, timeout=120)


@pytest.mark.parametrize(
    "args",
    [
        ["ingest", "--db", "postgresql://irlens@127.0.0.1/irlens", "README.md"],
        ["serve", "--db", "postgresql://irlens@127.0.0.1/irlens", "--get", "/-/health.json"],
        ["serve", "--db", "postgresql+psycopg://irlens@127.0.0.1/irlens", "--workers", "2"],
        ["token", "list", "--db", "postgres://irlens@127.0.0.1/irlens"],
        ["db", "upgrade", "--db", "postgresql://irlens@127.0.0.1/irlens"],
    ],
    ids=["ingest", "serve-get", "serve-workers", "token", "db-upgrade"],
)
def test_postgres_without_its_driver_is_one_line_naming_the_extra(args):
    result = run_cli(args, code=WITHOUT_PSYCOPG)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr  # one line
    assert "pip install 'irlens[postgres]'" in result.stderr
    assert result.stderr.startswith("irlens: ")


def test_another_missing_postgres_driver_points_at_the_extra_too():
    # psycopg2 is not what irlens installs: the message says which module and how to do without it
    with pytest.raises(DriverMissing, match=r"'psycopg2'.*postgresql\+psycopg://.*irlens\[postgres\]"):
        make_engine("postgresql+psycopg2://irlens@127.0.0.1/irlens")


def test_a_bare_postgresql_url_means_the_driver_the_extra_installs():
    assert database_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert database_url("postgres://u@h:5/db?x=1") == "postgresql+psycopg://u@h:5/db?x=1"
    assert database_url("postgresql+psycopg2://u@h/db") == "postgresql+psycopg2://u@h/db"
    assert database_url("sqlite:///x.db") == "sqlite:///x.db"


def test_serve_get_prints_no_warning(tmp_path):
    db_url = fresh_db_url(tmp_path)
    # every warning shown, each time, so one the default filters hide would show too
    result = run_cli(["serve", "--db", db_url, "--get", "/-/health.json"], PYTHONWARNINGS="always")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"status": "ok"}
    assert result.stderr == ""
    missing = run_cli(["serve", "--db", db_url, "--get", "/runs/nosuchrun.json"], PYTHONWARNINGS="always")
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["error"] == "no such run"
    assert missing.stderr == ""
