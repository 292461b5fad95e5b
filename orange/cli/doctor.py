"""``orange doctor``: what would stop a first task here, one line each, and what to run."""

from __future__ import annotations

from typing import Annotated

import typer

from orange.cli.output import emit_json
from orange.ops.doctor import as_json, blocking, check


def doctor(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Check tmux, git, the project and each coding agent for what a first task needs."""
    findings = check()
    if json_out:
        emit_json(as_json(findings))
    else:
        for finding in findings:
            typer.echo(finding.line())
    if blocking(findings):
        raise typer.Exit(1)
