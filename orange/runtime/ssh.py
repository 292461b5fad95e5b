"""The one SSH adapter (STYLE §4): every command Orange runs on another host goes
through here.

The ``ssh`` client is run with an argv list, never through a local shell:
``ssh -o BatchMode=yes -o ConnectTimeout=N [-F CONFIG] (-T|-t) -- TARGET COMMAND``.
``BatchMode`` makes a host that would ask for a password or a host key fail at once
instead of waiting for a person; ``--`` ends ssh's options, so a target can never be
read as one.  The remote side runs COMMAND through the login shell of the remote
user, so it is one string built with `shlex.join` from an argv list: ``env`` with the
host's variables (from this host's configuration), then that host's ``orange`` and its
arguments.  Where a host's entry comes from is the caller's business; nothing here
reads the task ref (DESIGN §8: no value from the ref reaches an ``ssh`` command line
but a validated task id, which callers pass as an argument).

ssh exits with 255 when it could not connect or the connection broke: that is
`HostUnreachable`, one line.  Any other status is the remote command's own.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from orange.errors import InvalidInput, OrangeError

CONFIG_ENV = "ORANGE_SSH_CONFIG"  # an ssh_config file every Orange ssh call uses
CONNECT_TIMEOUT = 10  # seconds ssh may take to connect (ConnectTimeout)
UNREACHABLE = 255  # ssh's own exit status for a failed connection

_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# user@host, host, host:port is not ssh syntax; an ssh_config alias is a word too.
_TARGET = re.compile(r"[A-Za-z0-9_.@%+\[\]:-]+")


class HostUnreachable(OrangeError):
    """ssh could not reach the host (or the connection broke)."""


class SshHost(NamedTuple):  # not a dataclass: see `orange.store.task.Task`
    """How to reach one host: all of it from this host's configuration."""

    name: str
    target: str  # what ssh connects to: user@host or an ssh_config alias
    ssh_config: str | None = None  # an ssh_config file (``-F``)
    env: tuple[tuple[str, str], ...] = ()  # variables the remote command runs with
    orange: str = "orange"  # the remote ``orange`` program


def check_target(target: str) -> str:
    """An SSH target as this host's configuration may hold it: a word of host-name
    characters (``user@host``, an alias), never one that ssh could read as an option."""
    if not target or target.startswith("-") or not _TARGET.fullmatch(target):
        raise InvalidInput(
            f"not an SSH target: {target!r}",
            hint="give user@host, host or an alias of your ssh config",
        )
    return target


def check_env(pairs: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``KEY=VALUE`` strings as (key, value) pairs, or a one-line error."""
    found = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not _ENV_KEY.fullmatch(key) or "\n" in value or "\0" in value:
            raise InvalidInput(
                f"not a KEY=VALUE environment setting: {pair!r}",
                hint="e.g. --env ORANGE_HOME=/srv/orange",
            )
        found.append((key, value))
    return tuple(found)


def remote_command(host: SshHost, args: Sequence[str]) -> str:
    """The command line the remote shell runs: ``env K=V ... ORANGE ARGS``, quoted."""
    argv = ["env", *(f"{k}={v}" for k, v in host.env), host.orange, *args]
    return shlex.join(argv)


def ssh_argv(
    host: SshHost, args: Sequence[str], *, tty: bool = False, timeout: int = CONNECT_TIMEOUT
) -> list[str]:
    """The local argv that runs ``orange ARGS`` on ``host``."""
    config = host.ssh_config or os.environ.get(CONFIG_ENV)
    argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={timeout}"]
    argv += ["-F", config] if config else []
    argv += ["-t"] if tty else ["-T"]
    return [*argv, "--", check_target(host.target), remote_command(host, args)]


class Answer(NamedTuple):
    code: int
    out: str
    err: str


def run(
    host: SshHost,
    args: Sequence[str],
    *,
    timeout: float = 120.0,
    stdin: str | None = None,
    connect_timeout: int = CONNECT_TIMEOUT,
) -> Answer:
    """Run ``orange ARGS`` on ``host`` and wait for it (at most ``timeout`` seconds,
    ``connect_timeout`` of them to connect); `HostUnreachable` when ssh could not get
    there."""
    argv = ssh_argv(host, args, timeout=connect_timeout)
    try:
        done = subprocess.run(
            argv,
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=_env(),
        )
    except subprocess.TimeoutExpired:
        raise HostUnreachable(
            f"host {host.name} ({host.target}) did not answer within {timeout:.0f} s"
        ) from None
    except FileNotFoundError:
        raise HostUnreachable(
            "no ssh client on this machine", hint="install OpenSSH's client"
        ) from None
    if done.returncode == UNREACHABLE:
        raise HostUnreachable(
            f"host {host.name} ({host.target}) unreachable: {_last_line(done.stderr)}",
            hint=f"check it with `orange host check {host.name}`",
        )
    return Answer(done.returncode, done.stdout, done.stderr)


def run_terminal(host: SshHost, args: Sequence[str]) -> int:
    """Run ``orange ARGS`` on ``host`` with this terminal (``ssh -t``); its exit
    status.  For attaching to a task's session there."""
    argv = ssh_argv(host, args, tty=True)
    try:
        code = subprocess.call(argv, env=_env())
    except FileNotFoundError:
        raise HostUnreachable(
            "no ssh client on this machine", hint="install OpenSSH's client"
        ) from None
    if code == UNREACHABLE:
        raise HostUnreachable(
            f"host {host.name} ({host.target}) unreachable",
            hint=f"check it with `orange host check {host.name}`",
        )
    return code


def _env() -> Mapping[str, str]:
    """This process's environment for ssh, without the variables that would make the
    client talk to an agent of Orange's own (none) or leak a task's identity."""
    return {k: v for k, v in os.environ.items() if not k.startswith("ORANGE_TASK")}


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no answer"
