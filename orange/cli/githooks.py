"""``orange hooks ...``, ``orange tasks ...`` and the hidden ``orange hook-impl``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orange.cli.context import current_project
from orange.githooks import checkout as taskscheckout
from orange.githooks import impl as hookimpl
from orange.githooks import shims as githooks
from orange.store.repo import open_repo

app = typer.Typer(help="Install or remove Orange's git hooks.", no_args_is_help=True)
tasks_app = typer.Typer(
    help="Edit tasks with plain git in a checkout of refs/orange/tasks.", no_args_is_help=True
)

ProjectOpt = Annotated[str | None, typer.Option("--project", "-p", help="Project name.")]


def _repo_path(project_name: str | None) -> str:
    project = current_project(project_name)
    return project.path if project is not None else "."


@app.command("install")
def install(
    project: ProjectOpt = None,
    server: Annotated[
        Path | None,
        typer.Option("--server", help="A shared bare repository: install its update hook."),
    ] = None,
) -> None:
    """Install the hooks into a project (or the update hook into a bare repository)."""

    if server is not None:
        written = githooks.install_server_hook(server)
    else:
        written = githooks.install_hooks(_repo_path(project))
    for path in written:
        typer.echo(f"installed {path}")


@app.command("uninstall")
def uninstall(
    project: ProjectOpt = None,
    server: Annotated[Path | None, typer.Option("--server", help="A bare repository.")] = None,
) -> None:
    """Remove Orange's hooks, putting back the hooks they chained."""

    removed = githooks.uninstall_hooks(server if server is not None else _repo_path(project))
    for path in removed:
        typer.echo(f"removed {path}")
    if not removed:
        typer.echo("no Orange hooks installed")


@tasks_app.command("checkout")
def checkout(
    directory: Annotated[Path, typer.Argument(help="Where to create the checkout.")],
    project: ProjectOpt = None,
) -> None:
    """Check out refs/orange/tasks into DIR, to edit tasks and commit with plain git."""

    path = taskscheckout.checkout(open_repo(_repo_path(project)), directory)
    typer.echo(f"checked out refs/orange/tasks in {path}; commit there with plain git")


@tasks_app.command("refresh")
def refresh(
    directory: Annotated[Path, typer.Argument(help="The tasks checkout.")] = Path("."),
) -> None:
    """Bring a tasks checkout up to date, keeping uncommitted edits."""

    result = taskscheckout.refresh(directory)
    if result.old == result.new:
        typer.echo("already up to date")
    else:
        typer.echo(f"updated to {result.new[:10]}")
    for path in result.kept:
        if path not in result.conflicts:
            typer.echo(f"kept your edit of {path}")
    for path in result.conflicts:
        typer.echo(f"conflict in {path}: both versions kept between markers", err=True)
    if result.conflicts:
        raise typer.Exit(1)


def hook_impl(
    name: Annotated[str, typer.Argument(help="The git hook.")],
    args: Annotated[list[str] | None, typer.Argument(help="The hook's arguments.")] = None,
) -> None:
    """Run a git hook's logic (called by the shims in the hooks directory)."""

    raise typer.Exit(hookimpl.run(name, args or []))
