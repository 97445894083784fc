"""Launch the system Chromium (Debian's package) from Playwright for browser tests.

Playwright's own browser download cannot run here, so tests drive /usr/bin/chromium
(or whatever IRLENS_CHROMIUM points at) and skip cleanly when it is absent.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

# As root Chromium needs --no-sandbox. The background-networking flags stop it from dialling
# Google's hosts, which this machine's closed network refuses, many connections at a time.
CHROMIUM_ARGS: list[str] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    """The Chromium binary browser tests use: $IRLENS_CHROMIUM, else /usr/bin/chromium."""
    return os.environ.get("IRLENS_CHROMIUM", "/usr/bin/chromium")


def chromium_available() -> bool:
    """True when the Chromium binary exists and Playwright's Python package imports."""
    path = chromium_path()
    executable = (Path(path).is_file() and os.access(path, os.X_OK)) or shutil.which(path) is not None
    if not executable:
        return False
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False
    return True


requires_chromium = pytest.mark.skipif(
    not chromium_available(), reason=f"Chromium not found at {chromium_path()} (set IRLENS_CHROMIUM)"
)


def launch_browser(playwright: Playwright) -> Browser:
    """Start headless system Chromium; Playwright gives it a fresh temporary profile."""
    return playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
