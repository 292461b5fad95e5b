"""``orange project ...``: the registry of projects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from orange import projects
from orange.cli.output import emit_json
from orange.engine.catalog import load_named
from orange.errors import OrangeError
from orange.githooks.shims import install_hooks

HELP = "Register and configure projects."


def _check_workflow(name: str | None) -> None:
    if name is not None:
        load_named(name)


def add(
    path: Annotated[str, typer.Argument(help="A path inside the repository.")] = ".",
    name: Annotated[str | None, typer.Option("--name", help="Project name.")] = None,
    pool_size: Annotated[int, typer.Option("--pool-size", help="Worktrees in the pool.")] = 2,
    workflow: Annotated[str, typer.Option("--workflow", help="Workflow name.")] = "default",
    json_out: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Register the repository at PATH as a project."""
    _check_workflow(workflow)
    project = projects.add(path, name=name, pool_size=pool_size, workflow=workflow)

    try:
        install_hooks(project.path)
        hooks_note = "git hooks installed"
    except OrangeError as exc:
        hooks_note = f"git hooks not installed: {exc} (run `orange hooks install`)"
    if json_out:
        emit_json(project._asdict())
    else:
        typer.echo(f"registered {project.name} ({project.path}, branch {project.default_branch})")
        typer.echo(hooks_note)


def list_(json_out: Annotated[bool, typer.Option("--json")] = False) -> None:
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
    pool_size: Annotated[int | None, typer.Option("--pool-size")] = None,
    workflow: Annotated[str | None, typer.Option("--workflow")] = None,
    json_out: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Change a project's pool size or workflow."""
    _check_workflow(workflow)
    target = name or projects.infer().name
    project = projects.update(target, pool_size=pool_size, workflow=workflow)
    if json_out:
        emit_json(project._asdict())
    else:
        typer.echo(f"updated {project.name}: pool={project.pool_size} workflow={project.workflow}")


def remove(
    name: Annotated[str, typer.Argument(help="Project name.")],
    json_out: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Forget a project (its repository and tasks are left alone)."""
    project = projects.remove(name)
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
)
