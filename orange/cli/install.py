"""``orange install``: Orange's skills and settings for the installed coding agents."""

from __future__ import annotations

from typing import Annotated

import typer

from orange.ops.install import install as install_files


def install(
    harness: Annotated[
        str | None, typer.Option("--harness", help="Only this harness (default: all found).")
    ] = None,
) -> None:
    """Install Orange's agent skills, permissions and hooks for your coding agents."""

    for path, outcome in install_files(harness):
        typer.echo(f"{outcome:9} {path}")
