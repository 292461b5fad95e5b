"""Several machines, end to end (issue 31): this host drives another one over real SSH
(OpenSSH's sshd on 127.0.0.1, or the asyncssh stand-in, `tests.ssh`).  The other host
is a second Orange home and clone of the hub, with its own tmux server and monitor,
reached only through SSH; scripted agents run there.

One story: a task created with ``--host`` runs in the other host's tmux; ``task peek``
and ``task attach`` reach it through SSH; it is taken back here and the other host
stops its agent; a host that stops answering shows "host unreachable since" in
``task list`` and its task is taken here, the host ending its own when it returns.
(A task worked and reviewed there, merged here and ended there: the two-host demo's
test, tests/e2e/test_demo.py.)
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import yaml

from orange.home import orange_home
from tests.conftest import git, orange_bin
from tests.e2e.conftest import World, add_hub, press_after_prefix, sessions_on, wait_for
from tests.hosts.conftest import CLAIM_TIMEOUT, FAKE, Other, make_other
from tests.ssh import SshServer, ssh_server

__all__ = ["ssh_server"]

HELLO = "hello from the other host"
HOLD = {"command": ["sh", "-c", f"echo {HELLO}; sleep 600", "{prompt}"]}


def _harnesses(home: Path) -> None:
    config = {"harnesses": {"fake": FAKE, "hold": HOLD}, "claim_timeout": CLAIM_TIMEOUT}
    (home / "config.yml").write_text(yaml.safe_dump(config))


def _attach_in_a_terminal(task_id: str, cwd: Path, socket: str) -> tuple[int, str]:
    """``orange task attach ID`` on a pseudo-terminal, as a person runs it: wait for
    the agent's words to show, then detach (C-b d) from the tmux server on ``socket``
    (the other host's).  Exit status and what it showed."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [orange_bin(), "task", "attach", task_id],
        cwd=cwd,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**os.environ, "TERM": "xterm"},
        start_new_session=True,
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 30
    detached = False
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            if not detached and HELLO.encode() in seen:
                press_after_prefix(socket, lambda keys: os.write(leader, keys), b"d")
                detached = True
            if process.poll() is not None:
                break
        return process.wait(20), seen.decode(errors="replace")
    except subprocess.TimeoutExpired:
        when = "after C-b d" if detached else "and the agent's words never showed"
        shown = seen[-800:]
        raise AssertionError(f"task attach did not exit {when}; it showed {shown!r}") from None
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        os.close(leader)


def test_a_task_on_another_host_over_ssh(
    world: World, tmp_path: Path, ssh_server: SshServer
) -> None:
    hub = add_hub(world, tmp_path)
    _harnesses(orange_home())
    other = make_other(tmp_path, hub, monitor="on")
    _harnesses(Path(other.env["ORANGE_HOME"]))
    try:
        _story(world, other, ssh_server, tmp_path)
    finally:
        _stop(other)


def _story(world: World, other: Other, server: SshServer, tmp_path: Path) -> None:
    world.ok(*other.add_args(server))

    # Created with --host: the agent runs in the other host's tmux, none here.
    made = json.loads(world.ok("task", "create", "--host", "box", "--harness", "hold",
                               "b1", "Hold", "--json").out)  # fmt: skip
    held = made["id"]
    assert made["on_host"] == "box"
    assert world.task(held).str_field("host") == "otherbox"
    assert len(sessions_on(other.socket)) == 1
    assert sessions_on(world.socket) == []

    # Peek and attach reach it through SSH.
    wait_for(lambda: HELLO in world.ok("task", "peek", held).out, 20, "the agent's words")
    code, shown = _attach_in_a_terminal(held, world.repo, other.socket)
    assert code == 0, shown
    assert HELLO in shown

    # Taken back here: it runs here, and the other host stops its agent.
    world.ok("task", "take", held)
    assert world.task(held).str_field("host") == "testhost"
    assert len(sessions_on(world.socket)) == 1
    world.ok("sync")
    wait_for(lambda: sessions_on(other.socket) == [], 40, "the other host to stop b1")

    # Moved there again with take --host; then the host stops answering.
    world.ok("task", "take", held, "--host", "box")
    assert world.task(held).str_field("host") == "otherbox"
    wait_for(lambda: sessions_on(world.socket) == [], 20, "this host to stop b1")
    hosts_file = orange_home() / "hosts.json"
    good = hosts_file.read_text()
    gone = json.loads(good)
    gone["hosts"][0]["ssh_config"] = str(server.unreachable_config(tmp_path))
    hosts_file.write_text(json.dumps(gone))
    checked = world.orange("host", "check", "box")
    assert checked.code == 1
    assert "host box (other) unreachable" in checked.out
    listed = world.ok("task", "list").out
    assert "running on otherbox; host unreachable since " in listed
    peeked = world.orange("task", "peek", held)
    assert peeked.code == 1
    assert len(peeked.err.strip().splitlines()) == 1

    # Taken here while the host is away; when it returns its sync ends its copy, the
    # work left in its worktree saved in a snapshot first.
    for worktree in (Path(other.env["ORANGE_HOME"]) / "workspaces").glob("proj--*"):
        (worktree / "unsaved.txt").write_text("half done\n")
    world.ok("task", "take", held)
    assert len(sessions_on(world.socket)) == 1
    world.ok("sync")
    wait_for(lambda: sessions_on(other.socket) == [], 40, "the returning host to stop b1")
    snapshots = git(other.clone, "for-each-ref", "--format=%(refname)", "refs/orange/snapshots")
    assert f"refs/orange/snapshots/{held}/" in snapshots


def _stop(other: Other) -> None:
    """Stop the other host's monitor and tmux server."""
    other.orange("monitor", "stop")
    subprocess.run(["tmux", "-L", other.socket, "kill-server"], capture_output=True, check=False)
