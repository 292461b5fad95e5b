"""``orange install``: Orange's skills and settings for the installed coding agents."""

from __future__ import annotations

from typing import Annotated

import typer

from orange.cli.output import emit_json
from orange.ops.install import install as install_files
from orange.ops.install import notes


def install(
    harness: Annotated[
        str | None, typer.Option("--harness", help="Only this harness (default: all found).")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Install Orange's agent skills, permissions and hooks for your coding agents."""
    written = install_files(harness)
    todo = notes(written)
    if json_out:
        files = [{"path": str(path), "outcome": outcome} for path, outcome in written]
        emit_json({"files": files, "notes": todo})
        return
    for path, outcome in written:
        typer.echo(f"{outcome:9} {path}")
    for note in todo:
        typer.echo(f"note: {note}")
