"""The SSH adapter against a real SSH server on 127.0.0.1: what the remote command
receives is exactly the argv Orange built, whatever the values hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from orange.errors import InvalidInput
from orange.runtime import ssh
from tests.ssh import SshServer, ssh_server

__all__ = ["ssh_server"]

NASTY = "a b; touch {p} $(touch {p}) `touch {p}` 'q' \"d\" \\ * ~ #"


def test_values_reach_the_remote_command_literally(ssh_server: SshServer, tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    value = NASTY.format(p=pwned)
    host = ssh.SshHost(
        "box", "other", str(ssh_server.config), (("ORANGE_X", value),), "/usr/bin/printenv"
    )
    answer = ssh.run(host, ["ORANGE_X"])
    assert answer.code == 0, answer.err
    assert answer.out == value + "\n"
    echoed = ssh.run(host._replace(orange="/bin/echo"), ["-n", value, "--", "-x"])
    assert echoed.out == f"{value} -- -x"
    assert not pwned.exists()


@pytest.mark.parametrize(
    "target",
    ["-oProxyCommand=touch x", "host name", "host;id", "", "a\nb", "$(id)"],
    ids=["option", "space", "semicolon", "empty", "newline", "substitution"],
)
def test_a_target_that_is_no_host_name_is_refused(target: str) -> None:
    with pytest.raises(InvalidInput, match="not an SSH target"):
        ssh.check_target(target)


def test_an_unreachable_host_is_one_line(ssh_server: SshServer, tmp_path: Path) -> None:
    config = ssh_server.unreachable_config(tmp_path)
    host = ssh.SshHost("box", "other", str(config), (), "/bin/true")
    with pytest.raises(ssh.HostUnreachable) as raised:
        ssh.run(host, [])
    assert str(raised.value.message).startswith("host box (other) unreachable: ")
    assert "\n" not in str(raised.value)
