"""A real SSH server on 127.0.0.1 for the tests of several machines, and the real
``ssh`` client's configuration to reach it.

OpenSSH's ``sshd`` where it is installed (CI installs it): a free port, a generated
host key and user key, ``-f`` a generated sshd_config, ``-D -e``.  Elsewhere a server
built on asyncssh (a test dependency) runs each command with ``/bin/sh -c``, as sshd
does.  Either way the client is the real ``ssh`` with a generated ssh_config (its
known_hosts holds the generated host key: ``StrictHostKeyChecking yes``) whose alias
``other`` reaches the server as this user; the tests pass it as a host's ``-F`` file.

The "other host" a test reaches is a second Orange home and clone on this machine: its
environment (``ORANGE_HOME``, ``ORANGE_HOST``, its tmux socket, ``PATH``) is the host
entry's ``--env``, prefixed to the remote command by Orange (`orange.runtime.ssh`).
One server per test process: it is started once and stopped at the end of the session.
"""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = Path("/usr/sbin/sshd")
SERVER_ENV = "ORANGE_TEST_SSH_SERVER"  # "asyncssh": that server even where sshd exists
ALIAS = "other"


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "orange-test", "-f", str(path)],
        check=True,
    )


def _wait_listening(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the SSH server exited: {log.read_text()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"the SSH server did not listen on {port}: {log.read_text()}")


def start_server(folder: Path) -> tuple[SshServer, subprocess.Popen[bytes]]:
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    host_key, user_key = folder / "host_key", folder / "user_key"
    _keygen(host_key)
    _keygen(user_key)
    (folder / "authorized_keys").write_text((folder / "user_key.pub").read_text())
    port = free_port()
    log = folder / "server.log"
    if SSHD.exists() and os.environ.get(SERVER_ENV) != "asyncssh":
        kind = "openssh"
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # its privilege separation
        config = folder / "sshd_config"
        config.write_text(
            f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
            f"PidFile {folder / 'sshd.pid'}\nAuthorizedKeysFile {folder / 'authorized_keys'}\n"
            "StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nUsePAM no\n"
            "PermitUserEnvironment no\nLogLevel ERROR\n"
        )
        argv = [str(SSHD), "-D", "-e", "-f", str(config)]
    else:
        kind = "asyncssh"
        argv = [
            sys.executable,
            "-m",
            "tests.asyncssh_server",
            str(port),
            str(host_key),
            str(folder / "authorized_keys"),
        ]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={
                "PATH": "/usr/local/bin:/usr/bin:/bin",
                "HOME": str(Path.home()),
                "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
            },
            start_new_session=True,
        )
    _wait_listening(port, process, log)
    pub = (folder / "host_key.pub").read_text().split()
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {pub[0]} {pub[1]}\n")
    client = folder / "ssh_config"
    client.write_text(
        f"Host {ALIAS}\n  HostName 127.0.0.1\n  Port {port}\n  User {getpass.getuser()}\n"
        f"  IdentityFile {user_key}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {folder / 'known_hosts'}\n  GlobalKnownHostsFile /dev/null\n"
        "  StrictHostKeyChecking yes\n  LogLevel ERROR\n"
    )
    return SshServer(port, client, kind), process


@pytest.fixture(scope="session")
def ssh_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    server, process = start_server(tmp_path_factory.mktemp("sshd"))
    try:
        yield server
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
