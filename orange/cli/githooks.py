"""``orange hooks install|uninstall`` and the hidden ``orange hook-impl`` the shims call."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from orange.cli.context import current_project
from orange.cli.output import emit_json
from orange.errors import InvalidInput
from orange.githooks import impl as hookimpl
from orange.githooks import shims as githooks

HELP = "Install or remove Orange's git hooks."

ProjectOpt = Annotated[str | None, typer.Option("--project", "-p", help="Project name.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def repo_path(project_name: str | None) -> str:
    project = current_project(project_name)
    return project.path if project is not None else "."


def install(
    project: ProjectOpt = None,
    server: Annotated[
        Path | None,
        typer.Option("--server", help="A shared bare repository: install its update hook."),
    ] = None,
    trusted_workflows: Annotated[
        Path | None,
        typer.Option(
            "--trusted-workflows",
            help="With --server: a directory of *.yml workflows the server trusts "
            "besides the shipped ones.",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Install the hooks into a project (or the update hook into a bare repository)."""

    if trusted_workflows is not None and server is None:
        raise InvalidInput(
            "--trusted-workflows is for a server's update hook",
            hint="orange hooks install --server REPO --trusted-workflows DIR",
        )
    if server is not None:
        written = githooks.install_server_hook(server, trusted_workflows)
    else:
        written = githooks.install_hooks(repo_path(project))
    if json_out:
        emit_json({"installed": [str(path) for path in written]})
        return
    for path in written:
        typer.echo(f"installed {path}")


def uninstall(
    project: ProjectOpt = None,
    server: Annotated[Path | None, typer.Option("--server", help="A bare repository.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Remove Orange's hooks, putting back the hooks they chained."""

    removed = githooks.uninstall_hooks(server if server is not None else repo_path(project))
    if json_out:
        emit_json({"removed": [str(path) for path in removed]})
        return
    for path in removed:
        typer.echo(f"removed {path}")
    if not removed:
        typer.echo("no Orange hooks installed")


def hook_impl(
    name: Annotated[str, typer.Argument(help="The git hook.")],
    args: Annotated[list[str] | None, typer.Argument(help="The hook's arguments.")] = None,
) -> None:
    """Run a git hook's logic (called by the shims in the hooks directory)."""

    raise typer.Exit(hookimpl.run(name, args or []))


# Registered by `orange.cli.main.build_app`.
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("install", install),
    ("uninstall", uninstall),
)
