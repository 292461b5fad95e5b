"""``orange stats``: the work as the tasks history tells it (`orange.ops.stats`)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Annotated

import typer

from orange import projects
from orange.cli.context import current_project
from orange.cli.output import emit_json
from orange.errors import InvalidInput
from orange.ops.stats import collect, render
from orange.projects import open_store


def stats(
    since: Annotated[
        str | None,
        typer.Option("--since", help="From a date (2026-11-01) or an age (7d, 12h)."),
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", "-p", help="One project (default: this one).")
    ] = None,
    all_projects: Annotated[
        bool, typer.Option("--all-projects", help="Every registered project.")
    ] = False,
    harness: Annotated[str | None, typer.Option("--harness", help="Only its tasks.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Tasks started and finished, reviews, crashes, time in each status and cost,
    from the tasks history alone."""
    start = parse_since(since) if since is not None else None
    here = None if all_projects else current_project(project)
    scope = [here] if here is not None else projects.load_all()
    report = collect(((p.name, open_store(p)) for p in scope), since=start, harness=harness)
    figures = report.report()
    if json_out:
        emit_json(figures)
        return
    for line in render(figures):
        typer.echo(line)


def parse_since(text: str) -> int:
    """Seconds since the epoch of ``2026-11-01`` (UTC), an ISO time, or ``7d``/``12h``/``30m``
    ago; `InvalidInput` otherwise."""
    age = re.fullmatch(r"(\d{1,6})([dhm])", text.strip())
    if age:
        unit = {"d": 86400, "h": 3600, "m": 60}[age[2]]
        return int(time.time()) - int(age[1]) * unit
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            f"--since {text!r} is neither a date nor an age", hint="use 2026-11-01, 7d or 12h"
        ) from None
    return int((when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp())
