"""Fixtures of the git-hook tests: a shared bare repository with the server hook."""

from __future__ import annotations

from pathlib import Path

import pytest

from orange.githooks import shims as githooks
from tests.conftest import git


@pytest.fixture
def hub(tmp_path: Path) -> Path:
    """A bare repository standing for the team's server, its ``update`` hook installed."""
    path = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(path))
    githooks.install_server_hook(path)
    return path
