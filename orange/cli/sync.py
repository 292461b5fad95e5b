"""``orange sync``: exchange tasks with a git remote (a thin layer over `orange.sync`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orange.cli.context import current_project
from orange.cli.output import emit_json
from orange.errors import NotFound
from orange.sync import remote as git_remote
from orange.sync.setup import setup as setup_refspec
from orange.sync.sync import Synced, sync_project


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
    found = current_project(project)
    if found is None:
        raise NotFound("not inside a registered project", hint="pass --project NAME")
    name = remote or git_remote.default_remote(Path(found.path), found.default_branch)
    if setup:
        setup_refspec(found, name)
        if json_out:
            emit_json({"remote": name, "refspec": git_remote.refspec(name)})
        else:
            typer.echo(f"git fetch {name} now also fetches {git_remote.refspec(name)}")
        return
    result = sync_project(found, name)
    if json_out:
        emit_json(result.as_json())
        return
    typer.echo(_describe(result))


def _describe(result: Synced) -> str:
    lines = [
        f"sync with {result.remote}: {len(result.incoming)} tasks in, "
        f"{len(result.outgoing)} out, {len(result.conflicts)} conflicts"
        + ("" if result.pushed else " (nothing to push)")
    ]
    lines += [f"  in:  {task}" for task in result.incoming]
    lines += [f"  out: {task}" for task in result.outgoing]
    for task, notes in result.conflicts.items():
        lines.append(f"  conflict: {task}: {'; '.join(notes)}")
    lines += [f"  {line}" for line in result.local]
    return "\n".join(lines)
