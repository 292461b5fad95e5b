"""``orange tasks checkout|refresh``: edit tasks with plain git in a checkout of the ref."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from orange.cli.githooks import ProjectOpt, repo_path
from orange.cli.output import emit_json
from orange.githooks import checkout as taskscheckout
from orange.store.repo import open_repo

HELP = "Edit tasks with plain git in a checkout of refs/orange/tasks."


def checkout(
    directory: Annotated[Path, typer.Argument(help="Where to create the checkout.")],
    project: ProjectOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Check out refs/orange/tasks into DIR, to edit tasks and commit with plain git."""
    path = taskscheckout.checkout(open_repo(repo_path(project)), directory)
    if json_out:
        emit_json({"checkout": str(path)})
        return
    typer.echo(f"checked out refs/orange/tasks in {path}; commit there with plain git")


def refresh(
    directory: Annotated[Path, typer.Argument(help="The tasks checkout.")] = Path("."),
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Bring a tasks checkout up to date, keeping uncommitted edits (exit 1 on a conflict)."""
    result = taskscheckout.refresh(directory)
    if json_out:
        emit_json(asdict(result))
        raise typer.Exit(1 if result.conflicts else 0)
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


# Registered by `orange.cli.main.build_app`.
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("checkout", checkout),
    ("refresh", refresh),
)
