"""The hook actions that start an agent and talk to it: ``spawn_agent``,
``spawn_reviewer`` (a process in the task's tmux session, in its bound worktree) and
``notify_worker`` (a message typed into the worker, or a respawn of a dead one).

Each follows the two phases of `orange.engine.actions`: ``prepare`` (before the status
is written, under the store lock: check, and prepare what is reversible — any failure
rejects the move with nothing written) and ``apply`` (after the write: take effect).
All are idempotent.  The tmux adapter is the composition root's (`orange.compose.tmux`),
handed to each action when the registry is built.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, ClassVar

from orange.engine.actions import Action, HookContext
from orange.engine.caller import ROLE_VARIABLE, TASK_VARIABLE
from orange.engine.decide import worker_spawn_spec
from orange.errors import HookFailed
from orange.home import orange_home
from orange.runtime import bindings, ready, workcopy
from orange.runtime import harness as harnesses
from orange.runtime import watcher as monitor
from orange.runtime.places import WORKER, reviewer_window
from orange.runtime.tmux import Tmux
from orange.store.task import Task


def _worktree(task: Task) -> Path:
    path = bindings.workspace_of(task)
    if path is None:
        raise HookFailed(
            f"task {task.id} has no workspace bound on this host",
            hint="it runs on another host, or was never started here",
        )
    return path


def _session(task: Task) -> str:
    """The task's tmux session that this host recorded starting (DESIGN §8)."""
    session = bindings.session_of(task)
    if session is None:
        raise HookFailed(f"task {task.id} has no tmux session bound on this host")
    return session


def agent_env(task: Task, agent_role: str) -> dict[str, str]:
    """What an agent process gets: its task and role (which moves its commands may take,
    `orange.engine.caller`), Orange's home, `orange` on PATH, and ``ORANGE_BIN``, the
    absolute path of this `orange` (a shell whose PATH is its profile's, as codex's
    login shell, finds it there; the skill says so)."""
    env = {
        TASK_VARIABLE: task.id,
        ROLE_VARIABLE: agent_role,
        "ORANGE_HOME": str(orange_home()),
        "ORANGE_BIN": harnesses.orange_executable(),
    }
    socket = os.environ.get("ORANGE_TMUX_SOCKET")
    if socket:
        env["ORANGE_TMUX_SOCKET"] = socket
    bin_dir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if bin_dir not in path.split(os.pathsep):
        env["PATH"] = os.pathsep.join(p for p in (bin_dir, path) if p)
    return env


class SpawnAgent(Action):
    name = "spawn_agent"

    def __init__(self, tmux: Tmux) -> None:
        self.tmux = tmux

    role_by_permissions: ClassVar[dict[str, str]] = {"full": "worker", "reduced": "reduced_worker"}
    default_harness = "task"

    def _harness(self, ctx: HookContext) -> harnesses.Harness:
        """``harness: review`` is the review harness, else the task's own."""
        task = ctx.task
        name = task.str_field("harness")
        if str(ctx.spec.get("harness") or self.default_harness) == "review":
            name = task.str_field("review_harness") or name
        return harnesses.resolve(name or None)

    def window(self, ctx: HookContext) -> str:
        return str(ctx.spec.get("window") or WORKER)

    def prepare(self, ctx: HookContext) -> dict[str, Any]:
        task = ctx.task
        if not task.str_field("workspace"):
            raise HookFailed(f"task {task.id} has no workspace to run an agent in")
        _worktree(task)  # bound by this host, or no process is started here
        harness = self._harness(ctx)
        harnesses.harness_env(harness.name)  # a broken config.yml starts nothing
        session = Tmux.session_name(task.project, task.branch)
        # Recorded before the commit (as a worktree is): an agent this host is about to
        # start is this host's to watch, even if the start never happens.
        bindings.record(task.project, task.id, session=session)
        updates: dict[str, Any] = {"tmux_session": session}
        if not task.str_field("harness"):
            updates["harness"] = harness.name
        increment = ctx.spec.get("increment")
        if increment:
            updates[str(increment)] = ctx.before.int_field(str(increment)) + 1
        return updates

    def apply(self, ctx: HookContext) -> None:
        task = ctx.task
        tmux = self.tmux
        session = _session(task)
        window = self.window(ctx)
        pane = tmux.pane(session, window)
        if pane is not None and not pane.dead:
            return  # already running: idempotent
        harness = self._harness(ctx)
        start_agent(ctx, tmux, session, window, harness, self.role(ctx), self.agent_role(ctx))
        bindings.record(task.project, task.id, run=task.str_field("agent_run"))

    def role(self, ctx: HookContext) -> str:  # a reviewer always gets the review command
        if self.agent_role(ctx) == "reviewer":
            return "reviewer"
        return self.role_by_permissions.get(str(ctx.spec.get("permissions") or "full"), "worker")

    def agent_role(self, ctx: HookContext) -> str:
        """The agent's ``ORANGE_AGENT_ROLE``: an agent started with the review harness
        reviews (fresh-worker's reviewer is a ``spawn_agent``), any other works."""
        harness = str(ctx.spec.get("harness") or self.default_harness)
        return "reviewer" if harness == "review" else "worker"


class SpawnReviewer(SpawnAgent):
    name = "spawn_reviewer"
    default_harness = "review"

    def window(self, ctx: HookContext) -> str:
        return reviewer_window(ctx.task)

    def agent_role(self, ctx: HookContext) -> str:
        return "reviewer"


def start_agent(
    ctx: HookContext,
    tmux: Tmux,
    session: str,
    window: str,
    harness: harnesses.Harness,
    role: str,
    agent_role: str,
) -> None:
    task = ctx.task
    worktree = _worktree(task)
    prompt = ctx.services.build_prompt(task, str(ctx.spec.get("prompt")))
    then = ctx.spec.get("then")  # notify_worker's message, for a worker it respawns
    if then:
        prompt = f"{prompt}\n\n{ctx.services.build_prompt(task, str(then))}"
    if workcopy.copy_path(worktree).name != workcopy.COPY:
        prompt = (
            f"(This project tracks its own TASK.md: Orange's task file is "
            f"{workcopy.ALT_COPY}. Read and write that file wherever this says TASK.md.)\n\n"
            + prompt
        )
    effort_key = "review_effort" if role == "reviewer" else "effort"
    effort = task.str_field(effort_key) or None
    argv = harness.command(prompt, role=role, effort=effort)  # type: ignore[arg-type]
    if argv and argv[0] == harness.binary:  # resolved here, never from PATH later
        argv[0] = harness.path() or argv[0]
    env = {**harnesses.harness_env(harness.name), **agent_env(task, agent_role)}
    project = ctx.services.project
    port = None if project is None else ready.port_of(project, worktree.name)
    if port is not None:
        env["ORANGE_PORT"] = str(port)  # the slot's port, as its setup commands saw it
    tmux.start(session, window, argv, cwd=worktree, env=env)

    monitor.install_tmux_hooks(tmux)
    monitor.ensure_running()


class NotifyWorker(Action):
    """Type a message into the worker; if its pane is dead, respawn it instead."""

    name = "notify_worker"

    def __init__(self, tmux: Tmux) -> None:
        self.tmux = tmux

    def apply(self, ctx: HookContext) -> None:
        task = ctx.task
        session = _session(task)  # never types into a session named only by the ref
        tmux = self.tmux
        pane = tmux.pane(session, WORKER)
        if pane is not None and not pane.dead:
            message = ctx.services.build_prompt(task, str(ctx.spec.get("message")))
            tmux.send_text(session, WORKER, message)
            return
        state = ctx.workflow.states.get(task.status)
        if state is None or not state.respawn_prompt:
            raise HookFailed(f"the worker of task {task.id} is not running")
        spec = worker_spawn_spec(state.respawn_prompt)
        # The new worker is told what the old one would have been: the respawn prompt
        # alone never says why the task came back (## Feedback, a review, stuck).
        spec = spec._replace(params={**spec.params, "then": str(ctx.spec.get("message"))})
        SpawnAgent(tmux).apply(
            HookContext(
                ctx.services,
                spec,
                ctx.workflow,
                ctx.before,
                task,
                ctx.options,
                messages=ctx.messages,
            )
        )
        ctx.say(f"the worker of task {task.id} was not running: respawned it")
