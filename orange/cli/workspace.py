"""``orange workspace ...``: the worktree pool of a project."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from orange import compose, projects
from orange.cli.output import emit_json
from orange.compose import build_engine
from orange.ops.workspaces import collect, init_pool, pool_status

HELP = "The worktree pool of a project."
ProjectOpt = Annotated[str | None, typer.Option("--project", help="Project name.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def init(project: ProjectOpt = None, json_out: JsonOpt = False) -> None:
    """Create all the project's worktrees now (they are otherwise made on first use)."""

    proj = projects.infer(name=project)
    created = init_pool(proj)
    if json_out:
        emit_json({"created": [str(p) for p in created]})
    else:
        for path in created:
            typer.echo(f"created {path}")
        if not created:
            typer.echo(f"all {proj.pool_size} workspaces of {proj.name} exist")


def list_(project: ProjectOpt = None, json_out: JsonOpt = False) -> None:
    """Each workspace of the pool and the task that holds it, then each run's."""

    proj = projects.infer(name=project)
    rows = pool_status(proj, tmux=compose.tmux)
    if json_out:
        emit_json({"workspaces": rows})
        return
    for row in rows:
        holder = f"task {row['task']} ({row['branch']})" if row["task"] else "free"
        if row["run"]:
            holder = f"run {row['run']} ({row['branch'] or 'detached'})"
        if row["setting_up"]:
            holder = f"task {row['task']} (setting up)"
        state = "" if row["exists"] else " (not created yet)"
        port = "" if row["port"] is None else f"\tport {row['port']}"
        typer.echo(f"{row['name']}\t{holder}{state}{port}")


def gc(
    project: ProjectOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Snapshot unsaved work.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Release worktrees whose task has ended or no longer exists (never losing work)."""

    engine = build_engine(projects.infer(name=project))
    released, kept, started = collect(engine, force=force, tmux=compose.tmux)
    if json_out:
        emit_json({"released": released, "kept": kept, "started": started})
        return
    for line in released:
        typer.echo(f"released {line}")
    for line in kept:
        typer.echo(f"kept {line}")
    if not released and not kept:
        typer.echo("nothing to clean")
    for line in started:
        typer.echo(line)


# Registered by `orange.cli.main.build_app`.
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("init", init),
    ("list", list_),
    ("gc", gc),
)
