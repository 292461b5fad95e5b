"""End-to-end fixtures: a registered project, a scripted agent as the harness, and a
tmux server of its own per test (killed afterwards)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import pytest
import yaml

from orange.engine.forgery import RECORD, verify_new
from orange.engine.trust import trusted_here
from orange.githooks import shims as githooks
from orange.home import orange_home
from orange.store.events import Change
from orange.store.lock import exclusive
from orange.store.store import Snapshot, TaskStore
from orange.store.task import Task
from tests.conftest import Result, git, make_repo, orange_here, run_orange
from tests.helpers import retry_until
from tests.processes import wait_gone

T = TypeVar("T")
C = TypeVar("C", bound="Change")
AGENT = [sys.executable, "-m", "orange.demo_agent"]
# How long a host's claim may take (``claim_timeout``; Orange's default is 10 s): a
# claim pushes through a hub whose hook replays the push, and on a loaded machine that
# can outlast 10 s, when the start would be refused as unreachable.  What the tests
# prove is which claim wins and what follows, not how fast.
CLAIM_TIMEOUT = 120


def wait_for(
    check: Callable[[], T | Literal[False] | None], timeout: float = 30.0, what: str = "condition"
) -> T:
    """`retry_until` with the end-to-end tests' longer default wait."""
    return retry_until(check, timeout, interval=0.1, what=what)


def commit_behind_engine(repo: Path, compute: Callable[[Snapshot], C]) -> C:
    """Test set-up written behind the engine (a state no legal path reaches quickly),
    taken as verified by this host: the monitor would otherwise restore it as a
    forgery (DESIGN §8).  Everything before it is verified first, as the monitor does."""
    store = TaskStore.open(repo)
    verify_new(store, trusted=trusted_here, actor="monitor")
    with exclusive(store.repo.orange_dir() / f"{RECORD}.lock"):
        change = store.commit(compute)
        (store.repo.orange_dir() / RECORD).write_text(f"{change.commit}\n")
    return change


@dataclass
class World:
    repo: Path
    socket: str
    harnesses: dict[str, Any] = field(default_factory=dict)

    def orange(self, *args: str, stdin: str | None = None, cwd: Path | None = None) -> Result:
        """``orange ARGS`` run in this process (`orange_here`): the agents, hooks and
        monitor the commands start are real processes all the same."""
        return orange_here(*args, cwd=cwd or self.repo, stdin=stdin)

    def process(self, *args: str, stdin: str | None = None, cwd: Path | None = None) -> Result:
        """``orange ARGS`` as a process of its own (for calls from threads, or commands
        that replace the process)."""
        return run_orange(*args, cwd=cwd or self.repo, stdin=stdin)

    def ok(self, *args: str, stdin: str | None = None, cwd: Path | None = None) -> Result:
        result = self.orange(*args, stdin=stdin, cwd=cwd)
        assert result.code == 0, (
            f"orange {' '.join(args)} -> {result.code}: {result.err}{result.out}"
        )
        return result

    def edit(self, task_id: str, section: str, text: str) -> None:
        """Write one body section through `orange task edit` (as a human would)."""
        self.ok("task", "edit", task_id, "--section", section, "--file", "-", stdin=text)

    def create(self, *args: str) -> str:
        out = self.ok("task", "create", *args, "--json").out
        return str(json.loads(out)["id"])

    def task(self, task_id: str) -> Task:
        return TaskStore.open(self.repo).get(task_id)

    def status(self, task_id: str) -> str:
        return self.task(task_id).status

    def wait_status(self, task_id: str, status: str, timeout: float = 40.0) -> Task:
        def reached() -> Task | None:
            task = self.task(task_id)
            return task if task.status == status else None

        try:
            return wait_for(reached, timeout, f"task {task_id} to reach {status}")
        except AssertionError:
            task = self.task(task_id)
            session = task.str_field("tmux_session")
            screens = "".join(
                f"--- {pane}:\n{self.tmux('capture-pane', '-p', '-t', pane)}"
                for pane in self.tmux(
                    "list-panes", "-a", "-F", "#{session_name}:#{window_name}"
                ).split()
            )
            raise AssertionError(
                f"task {task_id} is {task.status}, not {status}; attention="
                f"{task.str_field('attention')!r}; session {session}\n{screens}"
            ) from None

    def set_harness(self, name: str, worker: list[str], reviewer: list[str] | None = None) -> None:
        # The scripted agent calls no model: it costs nothing (the ledger).
        self.harnesses[name] = {
            "command": worker,
            "review_command": reviewer or worker,
            "usage": "none",
        }
        orange_home().mkdir(parents=True, exist_ok=True)
        config = {"harnesses": self.harnesses, "claim_timeout": CLAIM_TIMEOUT}
        (orange_home() / "config.yml").write_text(yaml.safe_dump(config))

    def tmux(self, *args: str) -> str:
        result = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False
        )
        return result.stdout

    def prompts(self, task_id: str, role: str) -> list[str]:
        folder = orange_home() / "agent-log"
        files = sorted(folder.glob(f"{task_id}-{role}-*.txt")) if folder.is_dir() else []
        return [f.read_text() for f in files]


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    socket = f"orange-test-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("ORANGE_TMUX_SOCKET", socket)
    monkeypatch.setenv("ORANGE_MONITOR", "on")  # real agents: the monitor watches them
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    repo = make_repo(tmp_path / "proj")
    w = World(repo=repo, socket=socket)
    w.set_harness(
        "fake",
        [*AGENT, "--role", "worker", "{prompt}"],
        [*AGENT, "--role", "reviewer", "--reviews", "FAIL,PASS", "{prompt}"],
    )
    w.ok("project", "add", "--pool-size", "2")
    yield w
    stop_everything(repo, socket, tmp_path)


def stop_everything(repo: Path, socket: str, root: Path, timeout: float = 30.0) -> None:
    """Stop the test's monitor and its tmux server (with the agents in it), as a user
    would, until nothing of the test runs: a monitor that was still starting is not
    seen by the first `monitor stop`, and a dying agent can make tmux start one."""
    deadline = time.monotonic() + timeout
    while True:
        orange_here("monitor", "stop", cwd=repo)
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
        if not wait_gone(root, 1.0) or time.monotonic() > deadline:
            return  # whatever is left, the hermetic fixture names and fails the test


def add_hub(world: World, tmp_path: Path) -> Path:
    """A bare hub with Orange's server hook as the project's origin: main pushed, sync
    set up."""
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    githooks.install_server_hook(hub)
    git(world.repo, "remote", "add", "origin", str(hub))
    git(world.repo, "push", "-q", "origin", "main")
    world.ok("sync", "--setup")
    return hub


def teammate_clone(
    world: World, tmp_path: Path, hub: Path, config: dict[str, Any]
) -> tuple[Path, dict[str, str]]:
    """A teammate's clone of ``hub``, added as project ``proj`` by an Orange of its own
    (home with ``config`` as its config.yml, with ``CLAIM_TIMEOUT`` unless it names a
    ``claim_timeout``; host ``teammate``, its own tmux server, no monitor); the clone
    and that Orange's environment."""
    home = tmp_path / "teammate-home"
    home.mkdir()
    (home / "config.yml").write_text(yaml.safe_dump({"claim_timeout": CLAIM_TIMEOUT, **config}))
    env = {
        "ORANGE_HOME": str(home),
        "ORANGE_HOST": "teammate",
        "ORANGE_MONITOR": "off",
        "ORANGE_TMUX_SOCKET": f"{world.socket}-b",
    }
    theirs = tmp_path / "teammate"
    git(tmp_path, "clone", "-q", str(hub), str(theirs))
    added = run_orange("project", "add", "--name", "proj", cwd=theirs, env=env)
    assert added.code == 0, added.err
    return theirs, env


def sessions_on(socket: str) -> list[str]:
    """The names of the sessions of the tmux server on ``socket`` (none if it is down)."""
    return _listed(socket, "list-sessions", "#{session_name}")


def key_tables(socket: str) -> list[str]:
    """The key table each client of the tmux server on ``socket`` is in."""
    return _listed(socket, "list-clients", "#{client_key_table}")


def _listed(socket: str, command: str, form: str) -> list[str]:
    listed = subprocess.run(
        ["tmux", "-L", socket, command, "-F", form], capture_output=True, text=True, check=False
    )
    return listed.stdout.split()


def press_after_prefix(socket: str, type_keys: Callable[[bytes], object], key: bytes) -> None:
    """Press tmux's prefix (C-b) on a terminal attached to the server on ``socket``,
    then ``key`` once tmux has taken the prefix (its one client is in the ``prefix`` key
    table), as a person types them.

    tmux takes two keys that each come within its ``assume-paste-time`` (1 ms) of the
    activity before them (the attach, the key before) as pasted text, and passes the
    second to the pane.  C-b and d written at once, just after the screen was drawn,
    sometimes typed "d" into the agent instead of detaching."""
    type_keys(b"\x02")
    wait_for(lambda: key_tables(socket) == ["prefix"], 20, "tmux to take the prefix key")
    # The look that saw it may have begun before tmux took C-b; one begun after puts a
    # whole tmux call (milliseconds) between C-b and ``key``, past the paste window.
    assert key_tables(socket) == ["prefix"]
    type_keys(key)


def commits_on(repo: Path, branch: str) -> list[str]:
    return git(repo, "log", "--format=%s", branch).splitlines()
