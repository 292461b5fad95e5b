"""A real SSH server on 127.0.0.1 for the tests of several machines, and the real
``ssh`` client's configuration to reach it: the demo's (`orange.demo_sshd`).

OpenSSH's ``sshd`` where it is installed (CI installs it); elsewhere a server built on
asyncssh (a test dependency, `tests/asyncssh_server.py`) runs each command with
``/bin/sh -c``, as sshd does.  Either way the client is the real ``ssh`` with a
generated ssh_config whose alias ``other`` reaches the server as this user; the tests
pass it as a host's ``-F`` file.

The "other host" a test reaches is a second Orange home and clone on this machine: its
environment (``ORANGE_HOME``, ``ORANGE_HOST``, its tmux socket, ``PATH``) is the host
entry's ``--env``, prefixed to the remote command by Orange (`orange.runtime.ssh`).
One server per test process: it is started once and stopped at the end of the session.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from orange import demo_sshd
from orange.demo_sshd import free_port

SERVER_ENV = "ORANGE_TEST_SSH_SERVER"  # "asyncssh": that server even where sshd exists
ALIAS = "other"
ASYNCSSH_SERVER = Path(__file__).with_name("asyncssh_server.py")


@dataclass(frozen=True)
class SshServer:
    port: int
    config: Path  # an ssh_config file whose host alias ``other`` reaches the server
    kind: str  # "openssh" or "asyncssh"

    def unreachable_config(self, folder: Path) -> Path:
        """An ssh_config file whose alias ``other`` points at a port nothing listens on."""
        text = self.config.read_text().replace(f"Port {self.port}", f"Port {free_port()}")
        path = folder / "ssh_config_unreachable"
        path.write_text(text)
        return path


def _asyncssh(port: int, host_key: Path, authorized: Path) -> list[str]:
    return [sys.executable, str(ASYNCSSH_SERVER), str(port), str(host_key), str(authorized)]


def server_command() -> demo_sshd.ServerCommand | None:
    """The server the tests run: None for OpenSSH's sshd, else the asyncssh stand-in."""
    openssh = demo_sshd.SSHD.exists() and os.environ.get(SERVER_ENV) != "asyncssh"
    return None if openssh else _asyncssh


@pytest.fixture(scope="session")
def ssh_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    command = server_command()
    server = demo_sshd.start(tmp_path_factory.mktemp("sshd"), ALIAS, command)
    try:
        yield SshServer(server.port, server.config, "asyncssh" if command else "openssh")
    finally:
        server.stop()
