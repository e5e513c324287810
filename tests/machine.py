"""What some tests need from the machine beyond Python: Debian's Chromium for the page
tests, Node.js with the packages `make test` installs for the test OpenID provider.

Without one, those tests skip, saying what is missing and how to install it; under CI
(``CI=true``) they fail instead, so a CI machine that lacks a part cannot pass by skipping.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest


def missing(reason: str) -> NoReturn:
    """Skip the test (locally) or fail it (under CI) for ``reason``."""
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def require_node_package(folder: Path, package: str) -> str:
    """The ``node`` executable, once ``folder`` has ``package`` installed (``make test``
    runs ``npm ci`` there), or skip/fail saying what to install."""
    node = shutil.which("node")
    if node is None:
        missing("needs Node.js 18 or later (apt-get install nodejs npm), then `make test`")
    if not (folder / "node_modules" / package).is_dir():
        missing(f"needs {package} in {folder.name}/node_modules: `make test` installs it with npm")
    return node
