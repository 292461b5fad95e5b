"""Fixtures of the git-hook tests: a shared bare repository with the server hook."""

from __future__ import annotations

from pathlib import Path

import pytest

from orange.githooks import shims as githooks
from tests.conftest import git


def make_hub(root: Path) -> Path:
    """A bare repository ``root/hub.git`` standing for the team's server, its ``update``
    hook installed."""
    path = root / "hub.git"
    git(root, "init", "-q", "--bare", str(path))
    githooks.install_server_hook(path)
    return path


@pytest.fixture
def hub(tmp_path: Path) -> Path:
    return make_hub(tmp_path)
