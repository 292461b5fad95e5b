"""Making a worktree ready when it is bound to a task, and tearing down on release
(docs/worktrees.md; the pieces are in `orange.runtime.prepare`).

When: ``acquire_workspace`` chooses a slot and checks the branch out under the store's
lock, marks the slot as being set up (`orange.runtime.settingup`) and asks the engine to
run `make_ready` outside the lock (`orange.engine.actions.NotReady`); the move is then
computed again and committed.  A failing or timed-out setup resets the worktree, drops
the marker and rejects the move: the task stays where it was, as with a full pool.

What: the repository's ``.orange/worktree.yml`` of the project's main checkout (the file
a ``git pull`` brings, never the task branch's copy, which an agent may edit) and the
project's local settings.  The repository's steps come first, then the local ones (a
host's own set-up builds on the team's); the repository's commands only run when a
human trusted the file's exact content here (`orange project trust-setup`), and so are
its copy globs applied (an untrusted file could copy this host's ignored secrets into a
worktree whose branch, pushed by anyone, does not ignore them); its ports always apply.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from orange.engine import trust
from orange.errors import OrangeError
from orange.home import load_config, orange_home
from orange.projects import Project
from orange.runtime import settingup, workspace
from orange.runtime.prepare import (
    SETUP_TIMEOUT,
    RepoFile,
    SetupFailed,
    copy_local_files,
    read_repo_file,
    run_commands,
    slot_port,
)


class Plan(NamedTuple):  # not a dataclass: see orange.engine.workflow
    """What to do to one slot's worktree, from both sources of settings."""

    copy: tuple[str, ...]
    setup: tuple[str, ...]
    teardown: tuple[str, ...]
    port: int | None
    warning: str  # one line for the user when the repository's commands do not run

    @property
    def anything(self) -> bool:
        return bool(self.copy or self.setup or self.warning)


def repo_file(project: Project) -> RepoFile | None:
    return read_repo_file(Path(project.path))


def repo_trusted(text: str) -> bool:
    """Whether a human trusted this exact content of the repository file here (the
    per-content store of `orange workflow trust`: hashes added by a human)."""
    digest = trust.definition_hash(text)
    return any(entry.digest == digest for entry in trust.added())


def slot_index(name: str) -> int:
    """Slot ``<project>--<n>`` has index n - 1: the first slot gets the base port."""
    return int(name.rsplit("--", 1)[1]) - 1


def plan_for(project: Project, name: str) -> Plan:
    """The plan for slot ``name``; a repository file that cannot be read or is not
    trusted adds no command (and a warning), never fails the spawn."""
    try:
        shared = repo_file(project)
    except OrangeError as exc:
        shared, warning = None, f"orange: warning: ignoring {exc} (local settings only)"
    else:
        warning = ""
    copy, setup, teardown = project.copy, project.setup, project.teardown
    if shared is not None:
        theirs = shared.settings
        if repo_trusted(shared.text):
            copy = theirs.copy + copy
            setup, teardown = theirs.setup + setup, theirs.teardown + teardown
        elif theirs.copy or theirs.setup or theirs.teardown:
            warning = (
                f"orange: {project.name}'s .orange/worktree.yml is not trusted on this host: "
                f"its commands do not run and its files are not copied (review and trust it "
                f"with `orange project trust-setup {project.name}`)"
            )
    port = slot_port(project, slot_index(name), shared.settings if shared else None)
    return Plan(copy, setup, teardown, port, warning)


def slot_env(task_id: str, name: str, port: int | None) -> dict[str, str]:
    """What setup and teardown commands (and, for the port, agents) see."""
    env = {
        "ORANGE_TASK_ID": task_id,
        "ORANGE_WORKSPACE": name,
        "ORANGE_WORKSPACE_INDEX": str(slot_index(name)),
    }
    if port is not None:
        env["ORANGE_PORT"] = str(port)
    return env


def port_of(project: Project, name: str) -> int | None:
    """The slot's port (None: no ports); a bad repository file gives no port."""
    try:
        shared = repo_file(project)
    except OrangeError:
        shared = None
    return slot_port(project, slot_index(name), shared.settings if shared else None)


def log_path(project: str, task_id: str) -> Path:
    """One log a task, setup and teardown runs appended (shown by `task show`)."""
    return orange_home() / "logs" / "worktrees" / project / f"{task_id}.log"


def timeout() -> float:
    """Seconds a command may run: ``setup_timeout`` in config.yml, else 10 minutes."""
    value = load_config().get("setup_timeout", SETUP_TIMEOUT)
    return float(value) if isinstance(value, int | float) and value > 0 else SETUP_TIMEOUT


def needs_readying(project: Project, name: str) -> bool:
    """Whether binding slot ``name`` has anything to do (else no detour at all)."""
    return plan_for(project, name).anything


def make_ready(project: Project, task_id: str, name: str, path: Path) -> None:
    """Copy the files and run the setup commands in ``path``; on failure undo the
    checkout (reset the worktree, drop the marker) and raise `SetupFailed`."""
    plan = plan_for(project, name)
    if plan.warning:
        print(plan.warning, file=sys.stderr)  # once per spawn: this runs once per binding
    log = log_path(project.name, task_id)
    try:
        _note(log, f"setup of task {task_id} in {name}")
        copied = copy_local_files(Path(project.path), path, plan.copy)
        if copied:
            _note(log, "copied " + ", ".join(copied))
        env = slot_env(task_id, name, plan.port)
        run_commands(plan.setup, path, env, log, what="setup", timeout=timeout())
    except (OrangeError, OSError) as exc:
        workspace.reset(project, path)
        settingup.clear(project.name, task_id)
        if isinstance(exc, SetupFailed):
            raise SetupFailed(f"{exc.message} in workspace {name}", hint=exc.hint) from None
        raise SetupFailed(
            f"could not make workspace {name} ready: {exc}", hint=f"see {log}"
        ) from None
    settingup.write(project.name, settingup.Mark(task_id, name, os.getpid(), ready=True))


def undo(project: Project, task_id: str, path: Path) -> None:
    """Release a slot whose move was not committed: the worktree back to the pool (what
    setup changed there is dropped; the branch's commits stay), the marker gone."""
    try:
        workspace.reset(project, path)
    finally:
        settingup.clear(project.name, task_id)


def tear_down(project: Project, task_id: str, path: Path) -> str | None:
    """Run the teardown commands in ``path``; the failure, as a line fit for the shared
    record (no command, no path: those are said here, on stderr), or None."""
    plan = plan_for(project, path.name)
    if not plan.teardown:
        return None
    log = log_path(project.name, task_id)
    try:
        _note(log, f"teardown of task {task_id} in {path.name}")
        env = slot_env(task_id, path.name, plan.port)
        run_commands(plan.teardown, path, env, log, what="teardown", timeout=timeout())
    except (OrangeError, OSError) as exc:
        print(f"orange: task {task_id}: {exc}", file=sys.stderr)
        shared = exc.shared if isinstance(exc, SetupFailed) else "teardown could not run"
        return f"{shared} (this host's worktree log has its output)"
    return None


def _note(log: Path, what: str) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"== {datetime.now(UTC).isoformat(timespec='seconds')} {what}\n")
