"""Fixtures of the tests of several machines: a bare hub with the server hook, this
host's project on it, and an "other host" (a second Orange home and clone of the hub)
reached only through a real SSH server on 127.0.0.1 (`tests.ssh`)."""

from __future__ import annotations

import os
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from orange.githooks import shims as githooks
from tests.conftest import Cli, Result, git, orange_bin, run_orange
from tests.ssh import SshServer, ssh_server

__all__ = ["ssh_server"]

AGENT = [sys.executable, "-m", "orange.demo_agent"]
# A claim pushes through a hub whose hook replays the push: on a loaded machine that
# can outlast Orange's default 10 s, and the start would be refused as unreachable.
CLAIM_TIMEOUT = 120
FAKE = {
    "command": [*AGENT, "--role", "worker", "{prompt}"],
    "review_command": [*AGENT, "--role", "reviewer", "--reviews", "PASS", "{prompt}"],
    "usage": "none",  # the scripted agent calls no model (the ledger)
}


@dataclass
class Other:
    """The other host: its clone, its home, and the environment its Orange runs with
    (given to `orange host add` as ``--env``, so Orange prefixes it to every command)."""

    clone: Path
    home: Path
    socket: str
    env: dict[str, str] = field(default_factory=dict)

    def orange(self, *args: str) -> Result:
        return run_orange(*args, cwd=self.clone, env=self.env)

    def add_args(self, server: SshServer, name: str = "box") -> list[str]:
        """``orange host add`` arguments that register this host as ``name``."""
        args = ["host", "add", name, "other", "--ssh-config", str(server.config)]
        args += ["--orange", orange_bin()]
        for key, value in self.env.items():
            args += ["--env", f"{key}={value}"]
        return args


def make_hub(tmp_path: Path, repo: Path) -> Path:
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    githooks.install_server_hook(hub)
    git(repo, "remote", "add", "origin", str(hub))
    git(repo, "push", "-q", "origin", "main")
    return hub


def make_other(tmp_path: Path, hub: Path, *, register: bool = True, monitor: str = "off") -> Other:
    """A second Orange home and clone of ``hub`` (host name ``otherbox``)."""
    home = tmp_path / "other-home"
    orange_home = home / "orange"
    orange_home.mkdir(parents=True)
    (home / ".gitconfig").write_text("[user]\n\tname = Other\n\temail = other@example.com\n")
    config = {"harnesses": {"fake": FAKE}, "claim_timeout": CLAIM_TIMEOUT}
    (orange_home / "config.yml").write_text(yaml.safe_dump(config))
    socket = f"orange-other-{uuid.uuid4().hex[:10]}"
    env = {
        "HOME": str(home),
        "ORANGE_HOME": str(orange_home),
        "ORANGE_HOST": "otherbox",
        "ORANGE_TMUX_SOCKET": socket,
        "ORANGE_MONITOR": monitor,
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
    }
    clone = tmp_path / "other-clone"
    git(tmp_path, "clone", "-q", str(hub), str(clone))
    other = Other(clone, home, socket, env)
    if register:
        added = other.orange("project", "add", "--name", "proj")
        assert added.code == 0, added.err
    return other


@pytest.fixture
def hub(tmp_path: Path, repo: Path, cli: Cli) -> Path:
    hub = make_hub(tmp_path, repo)
    cli.ok("project", "add", "--name", "proj", cwd=repo)
    cli.ok("sync", "--setup", cwd=repo)
    return hub
