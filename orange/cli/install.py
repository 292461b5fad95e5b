"""``orange install``: Orange's skills and settings for the installed coding agents."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from orange import projects
from orange.cli.output import emit_json
from orange.errors import InvalidInput
from orange.ops import firstuse
from orange.ops.install import install as install_files
from orange.ops.install import notes, targets


def install(
    harness: Annotated[
        str | None, typer.Option("--harness", help="Only this harness (default: all found).")
    ] = None,
    yes: Annotated[
        bool,
        typer.Option("--yes", help="Change the agents' own settings without asking."),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Install Orange's agent skills, permissions and hooks for your coding agents, and
    (with your consent) the agents' own settings that answer their first-use screens."""
    home = Path.home()
    writes = [
        write
        for name in targets(harness)
        for write in firstuse.plan(name, home, projects.load_all())
    ]
    if writes and not yes:
        _ask(writes)
    written = install_files(harness)
    # Planned again: `install_files` may have just changed the same file (Claude Code's
    # settings.json); the settings are the ones shown.
    writes = [
        write
        for name in targets(harness)
        for write in firstuse.plan(name, home, projects.load_all())
    ]
    firstuse.apply(writes)
    todo = notes(written)
    settled = [f"{s.path}: {s.key}" for w in writes for s in w.settings]
    if json_out:
        files = [{"path": str(path), "outcome": outcome} for path, outcome in written]
        emit_json({"files": files, "settled": settled, "notes": todo})
        return
    for path, outcome in written:
        typer.echo(f"{outcome:9} {path}")
    for line in settled:
        typer.echo(f"settled   {line}")
    for note in todo:
        typer.echo(f"note: {note}")


def _ask(writes: list[firstuse.Write]) -> None:
    """Show the changes to the agents' own settings and ask; refuse, having written
    nothing, without a terminal to ask on."""
    if not sys.stdin.isatty():
        raise InvalidInput(
            "orange install changes your agents' own settings only with your consent",
            hint="run it in a terminal to see the changes and answer, or add --yes",
        )
    typer.echo("To answer the agents' first-use screens ahead of time, Orange will set:")
    for write in writes:
        for setting in write.settings:
            typer.echo(f"  {setting.path}: {setting.key}  ({setting.screen})")
    if not typer.confirm("Write these settings?", default=False):
        raise InvalidInput("nothing written", hint="answer y, or pass --yes")
