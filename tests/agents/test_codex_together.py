"""Two codex tasks at once, with codex's shared background server running: each agent's
commands run as that task's agent (issue 25, item 1).

codex 0.171's TUI runs its tool calls in one app-server daemon per CODEX_HOME when one
is running (and starts it when none is): the daemon's environment is the one it was
started with, so every later TUI's commands ran with the first one's ORANGE_TASK_ID
(task B's `orange task update` moved task A, a reviewer ran as a worker).  Seen with the
real codex: a daemon started from a shell with FOO=A, then a TUI started with FOO=B ran
`echo $FOO` as A, the daemon its parent.  Here the daemon is started on purpose, as a
user's own codex session or the codex app would have left it, with another task's
environment; the test went red with Orange's guard taken out of the codex command line
(`--no-daemon`, and the `-c` override that also keeps codex off the daemon).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.conftest import settle
from tests.agents.modelserver import ModelServer
from tests.conftest import git
from tests.e2e.conftest import World, wait_for

WAIT = 300.0
FOREIGN = "someone-else"  # the task id in the daemon's environment


@pytest.fixture
def shared_daemon(agents: World) -> Iterator[Path]:
    """codex's background server, listening on the socket where every codex TUI of the
    test's HOME looks for it, with another agent's environment; its socket's path.

    Started as `codex app-server --listen unix://` (what codex's managed daemon runs),
    not `codex app-server daemon start`: that first copies codex's whole native package
    (about 420 MB) into ``$CODEX_HOME/packages`` to run from, and leaves an update loop
    running; the server the TUIs meet is the same."""
    # Another agent's environment with `orange` on its PATH, and commands in a plain
    # shell (a TUI's own config decides that, so the user's config.toml says it, as
    # Orange's command line does): a command run in the daemon acts as that agent.
    config = Path.home() / ".codex" / "config.toml"
    config.write_text("allow_login_shell = false\n" + config.read_text())
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    env = dict(os.environ, ORANGE_TASK_ID=FOREIGN, ORANGE_AGENT_ROLE="worker", PATH=path)
    socket = Path.home() / ".codex" / "app-server-control" / "app-server-control.sock"
    server = subprocess.Popen(
        ["codex", "app-server", "--listen", "unix://"],
        env=env, cwd=agents.repo, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(socket.exists, 120, "codex's background server to listen")
        yield socket
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_two_codex_tasks_each_act_as_themselves(
    agents: World, model: ModelServer, shared_daemon: Path
) -> None:
    settle(agents.repo)
    first = agents.create("first", "First feature", "--harness", "codex")
    wait_for(lambda: model.asked("# Task:"), WAIT, "the first agent to call the model")
    second = agents.create("second", "Second feature", "--harness", "codex")
    for task_id in (first, second):
        task = agents.wait_status(task_id, "reviewing", timeout=WAIT)
        assert task.int_field("review_round") == 1
        # The line the agent's shell wrote names the task that shell ran for.
        branch = task.str_field("branch")
        assert git(agents.repo, "show", f"{branch}:feature.txt") == f"feature by {task_id}\n"
    # The shared server was there all along: the agents did not use it.
    assert shared_daemon.exists(), "codex's background server went away during the test"
    assert not (Path.home() / ".codex" / "packages").exists()  # no copy of codex in HOME
