"""``orange sync``: exchange tasks with a git remote (a thin layer over `orange.sync`;
the work is `orange.cli.syncing`, which the fast path runs without typer)."""

from __future__ import annotations

from typing import Annotated

import typer

from orange.cli.syncing import run_sync


def sync_command(
    remote: Annotated[
        str | None,
        typer.Argument(help="The git remote (default: the default branch's remote, else origin)."),
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Project name (default: this one).")
    ] = None,
    setup: Annotated[
        bool, typer.Option("--setup", help="Only add the fetch refspec for the remote.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Fetch the remote's tasks, merge them with these, and push the result."""
    run_sync(remote, project, setup, json_out)
