"""Property: whatever legal session Orange's CLI and monitor make, the server's
``update`` hook accepts its history (the checker rejects nothing Orange writes).

Each example drives a fresh project through the real CLI (in-process) — creates,
section writes, moves to any target the workflow lists (refused ones write nothing),
request-changes, cancels, deletes of ended tasks — plus agent deaths and respawns
through the engine's own dead-session handling, then pushes the tasks ref to a bare
hub with the server hook installed.  Hook actions that drive worktrees and tmux are
recorded (the runtime is an outside boundary here), so no agent starts.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from orange import compose, projects
from orange.engine.catalog import load_named
from orange.engine.engine import Engine
from orange.engine.monitoring import handle_dead_session
from orange.errors import OrangeError
from orange.githooks import shims as githooks
from orange.store import layout
from orange.store.store import TaskStore
from tests.conftest import Cli, git, make_repo
from tests.recording import recording_registry

KINDS = ("move", "move", "move", "move", "die", "respawn", "edit", "request", "cancel", "delete")
STEPS = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(0, 1), st.integers(0, 9)),
    min_size=8,
    max_size=30,
)
# The CI profile's examples cost seconds each (a project, a hub, a push): fewer here.
_PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
EXAMPLES = _PROFILE.max_examples if _PROFILE.max_examples > 15 else 8
WORKFLOW = load_named("default")


def _content(section: str, to: str, n: int) -> str:
    """What the gate of the move to ``to`` wants under ``section`` (fresh: ``n``)."""
    for transition in WORKFLOW.transitions:
        gate = transition.gate
        if transition.to == to and gate is not None and gate.section == section:
            if gate.verdict:
                return f"Verdict: {gate.verdict}\n\nround {n}"
            return "\n".join(f"{name}: step {n}" for name in gate.fields) or f"text {n}"
    return f"note {n}"


class Session:
    def __init__(self, cli: Cli, repo: Path) -> None:
        self.cli = cli
        self.repo = repo
        self.ids: list[str] = []
        self.n = 0
        project = projects.get(repo.name)
        store = TaskStore.open(repo)
        self.monitor = Engine(store, project, registry=compose.runtime().registry, actor="monitor")

    def run(self, *args: str, stdin: str | None = None) -> bool:
        result = self.cli(*args, cwd=self.repo, stdin=stdin)
        assert result.code in (0, 1), f"orange {' '.join(args)} -> {result.code}: {result.err}"
        return result.code == 0

    def step(self, kind: str, pick: int, choice: int) -> None:
        self.n += 1
        if len(self.ids) < 2 and (kind == "move" or not self.ids):
            out = self.cli.ok("task", "create", "--no-spawn", "--json", f"b{self.n}", "work",
                              cwd=self.repo).json()  # fmt: skip
            self.ids.append(str(out["id"]))
            return
        task_id = self.ids[pick % len(self.ids)]
        status = self.monitor.store.get(task_id).status
        if kind == "move":
            targets = WORKFLOW.targets_from(status)
            if targets:  # mostly onwards (the first target), sometimes any other
                target = targets[0 if choice < 6 else choice % len(targets)]
                for t in WORKFLOW.transitions_between(status, target):
                    if t.gate is not None:
                        text = _content(t.gate.section, target, self.n)
                        name = t.gate.section.removeprefix("## ")
                        self.run("task", "edit", task_id, "--section", name, "--file", "-",
                                 stdin=text)  # fmt: skip
                if self.run("task", "update", task_id, "--status", target):
                    event(f"moved {status} -> {target}")
        elif kind == "edit":
            self.run("task", "edit", task_id, "--section", "Notes", "--file", "-",
                     stdin=f"note {self.n}")  # fmt: skip
        elif kind in ("die", "respawn"):
            try:
                if kind == "die":
                    event(f"death: {handle_dead_session(self.monitor, task_id).split(' ')[0]}")
                else:
                    self.monitor.respawn(task_id)
                    event("respawned")
            except OrangeError:
                pass
        elif kind == "request":
            self.run("task", "request-changes", task_id, "-m", f"more {self.n}")
        elif kind == "cancel":
            self.run("task", "cancel", "--yes", task_id)
        elif self.run("task", "delete", "--yes", task_id):
            self.ids.remove(task_id)
            event("deleted")


@settings(
    max_examples=EXAMPLES,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=STEPS)
def test_random_legal_sessions_replay_clean_through_the_server_hook(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, steps: list[tuple[str, int, int]]
) -> None:
    registry, _ = recording_registry()
    monkeypatch.setattr(compose, "runtime", lambda: compose.Runtime(registry, None, None))
    base = Path(tempfile.mkdtemp(dir=tmp_path))
    repo = make_repo(base / f"p{base.name.lower().replace('_', '')}")
    cli.ok("project", "add", cwd=repo)
    hub = base / "hub.git"
    git(base, "init", "-q", "--bare", str(hub))
    githooks.install_server_hook(hub)
    session = Session(cli, repo)
    for kind, pick, choice in steps:
        session.step(kind, pick, choice)
    result = subprocess.run(
        ["git", "push", "-q", str(hub), f"{layout.TASKS_REF}:{layout.TASKS_REF}"],
        cwd=repo, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
