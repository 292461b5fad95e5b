"""``orange project ...``: the registry of projects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from orange import compose, projects
from orange.cli.output import emit_json
from orange.cli.project_trust import trust_setup
from orange.engine.catalog import load_named
from orange.engine.forgery import start_record
from orange.errors import InvalidInput, OrangeError
from orange.githooks.shims import install_hooks
from orange.project_setup import SetupChange
from orange.runtime.adopt import ensure_adopted
from orange.store import listing
from orange.store.task import Task
from orange.sync import setup as sync_setup

HELP = "Register and configure projects."


def _check_workflow(name: str | None) -> None:
    """``name`` loads and is not `orange run`'s own (``run-subtask``: its subtasks are
    moved by the run, never started).  A workflow of a person's own with no agent at
    all (tasks a person moves by hand) is a choice, and stays allowed."""
    if name is None:
        return
    workflow = load_named(name)
    from orange.run.subtasks import WORKFLOW as RUNS_OWN

    if name == RUNS_OWN:
        raise InvalidInput(
            f"workflow {name} is `orange run`'s own: a task created under it stays "
            f"{workflow.initial_status}, moved only by a run",
            hint="choose another (see `orange workflow list`; default is the usual one)",
        )


def add(
    path: Annotated[str, typer.Argument(help="A path inside the repository.")] = ".",
    name: Annotated[str | None, typer.Option("--name", help="Project name.")] = None,
    pool_size: Annotated[int, typer.Option("--pool-size", help="Worktrees in the pool.")] = 2,
    workflow: Annotated[str, typer.Option("--workflow", help="Workflow name.")] = "default",
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Register the repository at PATH as a project."""
    _check_workflow(workflow)
    project = projects.add(path, name=name, pool_size=pool_size, workflow=workflow)
    # The project's binding record store starts now (adopting what an older Orange
    # may be running for it): from here on only this host's records bind anything.
    ensure_adopted(project, tmux=compose.tmux)
    # Forgery checks replay every commit that reaches the tasks ref from here on.
    start_record(projects.open_store(project))

    try:
        install_hooks(project.path)
        hooks_note = "git hooks installed"
    except OrangeError as exc:
        hooks_note = f"git hooks not installed: {exc} (run `orange hooks install`)"
    sync_note = _share(project)
    name_note = None if name is not None else _take_shared_name(project)
    if name_note is not None:
        project = projects.get(name_note[0])
        sync_note = f"{sync_note}; {name_note[1]}" if sync_note else name_note[1]
    if json_out:
        emit_json(project._asdict())
    else:
        typer.echo(f"registered {project.name} ({project.path}, branch {project.default_branch})")
        typer.echo(hooks_note)
        if sync_note:
            typer.echo(sync_note)


def _share(project: projects.Project) -> str | None:
    """With a remote: its fetch refspec added and its tasks brought in."""
    remote = sync_setup.setup(project)
    if remote is None:
        return None
    return sync_setup.bring_in(project, projects.open_store(project), remote)


def _take_shared_name(project: projects.Project) -> tuple[str, str] | None:
    """A clone's tasks carry the project name they were created under (its listing,
    pool and monitor go by it): a repository whose shared tasks all name one other
    project is registered under that name, when it is free here.  The name it is
    registered under and a line saying what happened; None when nothing is to say."""
    snap = projects.open_store(project).snapshot()
    names = {task.project for task in listing.tasks(snap) if isinstance(task, Task)}
    if len(names) != 1 or project.name in names:
        return None
    (shared,) = names
    try:
        renamed = projects.rename(project.name, shared)
    except InvalidInput:
        return project.name, (
            f"warning: its tasks belong to project {shared!r}, a name taken here; "
            f"to see them: `orange project remove {project.name}`, then add it again "
            f"with --name {shared} after removing the other"
        )
    ensure_adopted(renamed, tmux=compose.tmux)
    return shared, f"registered as {shared!r}, the name its shared tasks carry"


def list_(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """List registered projects."""
    registered = projects.load_all()
    if json_out:
        emit_json({"projects": [p._asdict() for p in registered]})
        return
    if not registered:
        typer.echo("no projects registered (add one with `orange project add`)")
    for p in registered:
        typer.echo(
            f"{p.name}\t{p.path}\tbranch={p.default_branch}\tpool={p.pool_size}\t"
            f"workflow={p.workflow}"
        )


def update(
    name: Annotated[str | None, typer.Argument(help="Project (default: this one).")] = None,
    pool_size: Annotated[int | None, typer.Option("--pool-size", help=_POOL)] = None,
    workflow: Annotated[str | None, typer.Option("--workflow", help=_WORKFLOW)] = None,
    copy: Annotated[list[str] | None, typer.Option("--copy", help=_COPY)] = None,
    setup: Annotated[list[str] | None, typer.Option("--setup", help=_SETUP)] = None,
    teardown: Annotated[list[str] | None, typer.Option("--teardown", help=_TEARDOWN)] = None,
    port_base: Annotated[int | None, typer.Option("--port-base", help=_PORTS)] = None,
    port_stride: Annotated[int | None, typer.Option("--port-stride", help=_STRIDE)] = None,
    clear_copy: Annotated[
        bool, typer.Option("--clear-copy", help="Forget the copy globs.")
    ] = False,
    clear_setup: Annotated[
        bool, typer.Option("--clear-setup", help="Forget the setup commands.")
    ] = False,
    clear_teardown: Annotated[
        bool, typer.Option("--clear-teardown", help="Forget the teardown commands.")
    ] = False,
    clear_ports: Annotated[bool, typer.Option("--clear-ports", help="No ports.")] = False,
    sync_interval: Annotated[str | None, typer.Option(help=_SYNC_INTERVAL)] = None,
    check: Annotated[str | None, typer.Option("--check", help=_CHECK)] = None,
    budget: Annotated[str | None, typer.Option("--budget", help=_BUDGET)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Change a project's pool size, workflow, or how its worktrees are made ready."""
    change = SetupChange(
        copy=tuple(copy or ()),
        setup=tuple(setup or ()),
        teardown=tuple(teardown or ()),
        clear_copy=clear_copy,
        clear_setup=clear_setup,
        clear_teardown=clear_teardown,
        port_base=port_base,
        port_stride=port_stride,
        clear_ports=clear_ports,
    )
    interval = None if sync_interval is None else projects.parse_interval(sync_interval)
    if budget is not None and budget.strip() not in ("", "off"):
        from orange.engine.ledger import budget_text  # Decimal: for a budget only

        budget = budget_text(budget)
    elif budget is not None:
        budget = ""
    if (pool_size, workflow, interval, check, budget) == (None,) * 5 and not (
        change.changes_anything()
    ):
        raise InvalidInput("nothing to update", hint=_WHAT_CAN_CHANGE)
    _check_workflow(workflow)
    target = name or projects.infer().name
    project = projects.update(
        target,
        pool_size=pool_size,
        workflow=workflow,
        setup=change.applied,
        sync_interval=interval,
        check=check,
        budget=budget,
    )
    if json_out:
        emit_json(project._asdict())
    else:
        typer.echo(f"updated {project.name}: {_settings(project)}")


_WHAT_CAN_CHANGE = (
    "give --pool-size, --workflow, --copy, --setup, --teardown, --port-base, --sync-interval, "
    "--check or --budget"
)
_BUDGET = "Dollars each new task may cost unless it says (--budget off: none)."
_SYNC_INTERVAL = "Sync tasks with the remote every Ns or Nm from the monitor (off: never)."
_CHECK = "Run CMD on each merged result of `task merge --ready` ('' for none)."
_POOL = "Worktrees in the pool."
_WORKFLOW = "Workflow for new tasks."
_STRIDE = "Ports between slots (default 10)."
_COPY = "Copy files matching GLOB from the main checkout into new worktrees (repeatable)."
_SETUP = "Run CMD in a worktree when it is bound to a task, before the agent (repeatable)."
_TEARDOWN = "Run CMD in a worktree when it is released (repeatable)."
_PORTS = "Give pool slot i the port N + i * stride (ORANGE_PORT)."


def _settings(project: projects.Project) -> str:
    parts = [f"pool={project.pool_size}", f"workflow={project.workflow}"]
    if project.copy:
        parts.append(f"copy={','.join(project.copy)}")
    parts += [f"setup: {command}" for command in project.setup]
    parts += [f"teardown: {command}" for command in project.teardown]
    if project.port_base is not None:
        parts.append(f"ports={project.port_base}+{project.port_stride}n")
    if project.sync_interval:
        parts.append(f"sync every {project.sync_interval}s")
    if project.check:
        parts.append(f"check: {project.check}")
    if project.budget:
        parts.append(f"budget=${project.budget}")
    return " ".join(parts)


def remove(
    name: Annotated[str, typer.Argument(help="Project name.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Forget a project (its repository and tasks are left alone)."""
    project = projects.remove(name)
    sync_setup.teardown(project)
    if json_out:
        emit_json(project._asdict())
    else:
        typer.echo(f"removed {project.name} (its tasks stay in {project.path})")


# Registered by `orange.cli.main.build_app`.
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("add", add),
    ("list", list_),
    ("update", update),
    ("remove", remove),
    ("trust-setup", trust_setup),
)
