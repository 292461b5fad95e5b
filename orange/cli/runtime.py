"""Commands that work with the running side of a task: attach, peek, merge, PRs."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from orange import compose
from orange.cli.context import locate
from orange.cli.engine import engine_for, report_outcome
from orange.cli.moves import TaskArg
from orange.cli.output import emit_json, task_object, visible
from orange.cli.task import JsonOpt, ProjectOpt
from orange.engine.decide import can_start
from orange.engine.definitions import is_active
from orange.engine.elsewhere import running_elsewhere
from orange.engine.workflow import Workflow
from orange.errors import InvalidInput
from orange.home import host_name
from orange.ops.merge import merge_task, rebase_task
from orange.run.state import agent_log
from orange.runtime.bindings import session_of, workspace_of
from orange.runtime.places import agent_window
from orange.runtime.snapshots import restore as restore_snapshot
from orange.store.branches import check_branch_name
from orange.store.store import TaskStore
from orange.store.task import Task

if TYPE_CHECKING:
    from orange.engine.engine import Engine
    from orange.hosts.roster import Host


def attach(task: TaskArg = None, project: ProjectOpt = None) -> None:
    """Attach to a task's tmux session (respawning a dead agent first when allowed)."""

    ref = locate(task, project)
    engine = engine_for(ref)
    current = ref.store.get(ref.task_id)
    remote = _remote_host(ref.store, current)
    if remote is not None:
        from orange.cli.hosting import attach_remote

        attach_remote(remote, ref.project, current.id)
        return
    # Only what this host bound (DESIGN §8): a session or worktree named by the ref
    # alone is neither respawned into nor attached to.
    session = session_of(current)
    workflow = engine.workflow(current)
    state = workflow.states.get(current.status)
    if state is not None and state.respawn_prompt and workspace_of(current) is not None:
        probe = engine.probe
        if probe is not None and not probe.is_alive(current, state.agent):
            report_outcome(engine.respawn(ref.task_id), False)
            session = session_of(ref.store.get(ref.task_id))
    tmux = compose.tmux()
    if not session or not tmux.has_session(session):
        raise _no_session(workflow, current)
    tmux.attach(session)


def _remote_host(store: TaskStore, task: Task) -> Host | None:
    """The registered host a task runs on when that is not this one; an error when it
    runs on a host not registered here (the ref's ``host`` is a key into this host's
    configuration, never an SSH target)."""
    elsewhere = running_elsewhere(task, active=is_active(store.snapshot(), task), here=host_name())
    if elsewhere is None:
        return None
    from orange.hosts.roster import by_reported

    found = by_reported(elsewhere)
    if found is None:
        raise InvalidInput(
            f"task {task.id} runs on host {visible(elsewhere)}, which is not registered here",
            hint="register it with `orange host add NAME SSH_TARGET`, or move the task "
            f"here with `orange task take {task.id}`",
        )
    return found


def _no_session(workflow: Workflow, task: Task) -> InvalidInput:
    """Why there is nothing to attach to, with a hint that applies to the task's
    status: ``spawn`` only where it would start an agent."""
    message = f"task {task.id} has no running tmux session on this host"
    if workflow.is_terminal(task.status):
        return InvalidInput(
            f"task {task.id} is {task.status}: a finished task has no session to attach to",
            hint=f"its record: `orange task show {task.id}`",
        )
    if can_start(workflow, task.status) and workspace_of(task) is None:
        return InvalidInput(message, hint=f"start it with `orange task spawn {task.id}`")
    # Not startable here: a status waiting for a human, or bound on another host.
    return InvalidInput(message, hint=f"see where it stands with `orange task show {task.id}`")


def peek(
    task: TaskArg = None,
    lines: Annotated[int, typer.Option("--lines", "-n", help="How many lines.")] = 40,
    project: ProjectOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Print the recent output of the task's agent (and whether it exited)."""

    if lines < 1:  # tmux would print nothing, as if the agent had said nothing
        raise InvalidInput(f"--lines must be at least 1 (got {lines})")
    ref = locate(task, project)
    current = ref.store.get(ref.task_id)
    remote = _remote_host(ref.store, current)
    if remote is not None:
        from orange.cli.hosting import peek_remote

        peek_remote(remote, ref.project, current.id, lines, json_out)
        return
    session = session_of(current)
    if not session and agent_log(current) is not None:
        _peek_log(current, lines, json_out)
        return
    if not session:
        raise InvalidInput(f"task {current.id} has no tmux session on this host")
    state = engine_for(ref).workflow(current).states.get(current.status)
    window = agent_window(current, state.agent if state else "worker")
    tmux = compose.tmux()
    pane = tmux.pane(session, window)
    if pane is None:
        raise InvalidInput(f"task {current.id} has no {window} window in {session}")
    output = _last_output(tmux.capture(session, window, lines), pane.dead)
    exited = _exit_note(pane.dead, pane.dead_status, pane.dead_signal)
    if json_out:
        emit_json(
            {
                "task": current.id,
                "window": window,
                "alive": not pane.dead,
                "exit_status": pane.dead_status,
                "exit_signal": pane.dead_signal,
                "output": output,
            }
        )
        return
    if exited:
        typer.echo(f"the {window} agent {exited}; its last output:" if output else exited)
    if output:
        typer.echo(output)


def _peek_log(task: Task, lines: int, json_out: bool) -> None:
    """A subtask of `orange run`: its agents run without tmux, their output in a log."""
    log = agent_log(task)
    assert log is not None
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    output = "\n".join(text.rstrip().splitlines()[-lines:])
    if json_out:
        emit_json({"task": task.id, "log": str(log), "output": output})
        return
    typer.echo(f"the agents of run {task.str_field('run')} write to {log}")
    if output:
        typer.echo(visible(output))


def _last_output(screen: str, dead: bool) -> str:
    """The pane's text without its empty rows at the end (nor, for a dead pane, the
    "Pane is dead" line tmux's remain-on-exit adds)."""
    rows = screen.rstrip().splitlines()
    if dead and rows and rows[-1].startswith("Pane is dead"):
        rows = "\n".join(rows[:-1]).rstrip().splitlines()
    return "\n".join(rows)


def _exit_note(dead: bool, status: int | None, signal: int | None) -> str | None:
    if not dead:
        return None
    if signal is not None:
        return f"was killed by signal {signal}"
    return "exited" if status is None else f"exited with status {status}"


def merge(
    task: TaskArg = None,
    strategy: Annotated[str | None, typer.Option("--strategy", help="ff or merge.")] = None,
    local: Annotated[bool, typer.Option("--local", help="Merge here, not via the PR.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Snapshot unsaved work.")] = False,
    ready: Annotated[
        bool,
        typer.Option(
            "--ready",
            help="Merge every reviewed task whose dependencies are merged, in order; stop "
            "at the first that would conflict or fails the project's check.",
        ),
    ] = False,
    project: ProjectOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Merge a reviewed task into the default branch and finish it (done)."""

    if ready:
        if task is not None or strategy is not None or force:
            raise InvalidInput(
                "--ready merges every ready task: it takes no task id, --strategy or --force",
                hint="`orange task merge --ready`, or `orange task merge ID`",
            )
        from orange.cli.train import merge_ready_command

        merge_ready_command(project, json_out)
        return
    ref = locate(task, project)
    engine = engine_for(ref)
    current = ref.store.get(ref.task_id)
    fetched = _fetch_from_host(engine, ref.store, current)
    outcome = merge_task(
        engine,
        ref.project,
        current,
        strategy=strategy,
        local=local,
        force=force,
        gh=compose.gh(),
    )
    outcome.messages[:0] = fetched
    report_outcome(outcome, json_out)


def _fetch_from_host(engine: Engine, store: TaskStore, task: Task) -> list[str]:
    """A task running on another host: its branch, pushed there when it entered review,
    fetched from the sync remote first (never forced); a warning when it was not."""
    if running_elsewhere(task, active=is_active(store.snapshot(), task), here=host_name()) is None:
        return []
    from orange.sync.take import fetch_branch  # the sync remote: for such a task only

    warning = fetch_branch(engine, check_branch_name(task.branch))
    return [warning] if warning else []


def rebase(task: TaskArg = None, project: ProjectOpt = None, json_out: JsonOpt = False) -> None:
    """Send a task in review back to its agent to bring its branch up to date with the
    branch it merges into and resolve the conflicts; it then returns to review."""

    ref = locate(task, project)
    engine = engine_for(ref)
    outcome = rebase_task(engine, ref.project, ref.store.get(ref.task_id))
    report_outcome(outcome, json_out)


def create_pr(task: TaskArg = None, project: ProjectOpt = None, json_out: JsonOpt = False) -> None:
    """Push the task's branch and open a pull request (title: summary; body: ## Handoff)."""

    ref = locate(task, project)
    current = ref.store.get(ref.task_id)
    url = compose.gh().create_pr(ref.project, current)
    updated = engine_for(ref).set_fields(current.id, {"pr_url": url}, "task.updated", "pr_url")
    if json_out:
        emit_json(task_object(updated))
    else:
        typer.echo(f"task {updated.id}: opened {url}")


def restore(
    task: Annotated[str, typer.Argument()],
    snapshot: Annotated[
        int | None, typer.Option("--snapshot", help="Number (default last).")
    ] = None,
    project: ProjectOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Put a task's saved work (from a forced cancel or merge) back on a branch."""

    ref = locate(task, project)
    branch, snap_ref = restore_snapshot(ref.project, ref.store.get(ref.task_id), snapshot)
    if json_out:
        emit_json({"id": ref.task_id, "branch": branch, "snapshot": snap_ref})
    else:
        typer.echo(f"restored {snap_ref} on branch {branch}")


# `task` subcommands, registered by `orange.cli.main.build_app`.
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("attach", attach),
    ("peek", peek),
    ("merge", merge),
    ("rebase", rebase),
    ("create-pr", create_pr),
    ("restore", restore),
)
