"""A private SSH server on 127.0.0.1, and the real ``ssh`` client's configuration to
reach it: for ``orange demo --hosts 2`` and the tests of several machines.

OpenSSH's ``sshd`` (``-D -e -f`` a generated sshd_config: a free port, a generated host
key, this user logging in with a generated user key, no password, no PAM) unless the
caller gives another server's command line (the tests' asyncssh stand-in, where sshd is
not installed).  The client side is an ssh_config file whose one alias reaches the
server as this user, its known_hosts holding the generated host key
(``StrictHostKeyChecking yes``): Orange is given it as a host's ``--ssh-config``.
"""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

SSHD = Path("/usr/sbin/sshd")
LISTEN_TIMEOUT = 20.0  # seconds the server may take to listen

# The command line of another server: (port, host key, authorized_keys) -> argv.
ServerCommand = Callable[[int, Path, Path], list[str]]


class SshServer(NamedTuple):
    port: int
    config: Path  # an ssh_config file whose host alias reaches the server
    alias: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(folder: Path, alias: str, command: ServerCommand | None = None) -> SshServer:
    """Start the server with its files in ``folder`` (made private); wait until it
    listens.  Its output goes to ``folder/server.log``."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    host_key, user_key = folder / "host_key", folder / "user_key"
    for key in (host_key, user_key):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "orange", "-f", str(key)],
            check=True,
        )
    authorized = folder / "authorized_keys"
    authorized.write_text((folder / "user_key.pub").read_text())
    port = free_port()
    argv = (command or _sshd)(port, host_key, authorized)
    log = folder / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(Path.home())},
            start_new_session=True,
        )
    server = SshServer(port, folder / "ssh_config", alias, process)
    try:
        _wait_listening(port, process, log)
    except BaseException:
        server.stop()
        raise
    kind, public = (folder / "host_key.pub").read_text().split()[:2]
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {kind} {public}\n")
    server.config.write_text(
        f"Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {getpass.getuser()}\n"
        f"  IdentityFile {user_key}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {folder / 'known_hosts'}\n  GlobalKnownHostsFile /dev/null\n"
        "  StrictHostKeyChecking yes\n  LogLevel ERROR\n"
    )
    return server


def _sshd(port: int, host_key: Path, authorized: Path) -> list[str]:
    folder = host_key.parent
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # its privilege separation
    config = folder / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
        f"PidFile {folder / 'sshd.pid'}\nAuthorizedKeysFile {authorized}\n"
        "StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nUsePAM no\n"
        "PermitUserEnvironment no\nLogLevel ERROR\n"
    )
    return [str(SSHD), "-D", "-e", "-f", str(config)]


def _wait_listening(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + LISTEN_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the SSH server exited: {log.read_text().strip()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"the SSH server did not listen on port {port}: {log.read_text()}")
