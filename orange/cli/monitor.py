"""``orange monitor``: react to dead agents (also started in the background)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from orange.cli.output import emit_json
from orange.monitor.loop import PassReport, loop, run_pass
from orange.runtime.watcher import read_status, stop

HELP = "Watch agents and apply the workflows' exit rules."


def monitor(
    ctx: typer.Context,
    once: Annotated[bool, typer.Option("--once", help="One pass, then exit.")] = False,
    task: Annotated[str | None, typer.Option("--task", help="Only this task.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Run the monitor loop (one per host), or one pass with --once."""
    if ctx.invoked_subcommand is not None:
        return

    if not once:
        raise typer.Exit(loop())
    if task is None:
        # Many at once when many agents die together: one pass at a time covers them all.
        from orange.monitor.once import run_once

        coalesced = run_once()
        report = coalesced if coalesced is not None else PassReport()
    else:
        report = run_pass(task)
    if json_out:
        emit_json({"checked": report.checked, "dead": report.dead, "actions": report.actions})
        return
    for line in report.actions:
        typer.echo(line)


def stop_cmd(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Stop this host's monitor loop (task commands start it again when needed)."""
    stopped = stop()
    if json_out:
        emit_json({"stopped": stopped})
    else:
        typer.echo("monitor stopped" if stopped else "monitor: not running")


def status(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Whether the monitor runs, since when, what it did last, how far behind its
    verification of new task commits is."""

    data = read_status()
    if json_out:
        emit_json(data)
        return
    if not data.get("running"):
        typer.echo("monitor: not running")
        if data.get("last_pass"):
            typer.echo(f"last pass: {data['last_pass']}")
    else:
        typer.echo(f"monitor: running (pid {data.get('pid')}) since {data.get('since')}")
        typer.echo(f"last pass: {data.get('last_pass')}, active tasks: {data.get('active_tasks')}")
        behind = data.get("unverified_commits") or {}
        for name, left in sorted(behind.items()):
            typer.echo(f"verification behind: {left} new task commits of {name} left to verify")
    for line in data.get("last_actions", [])[-10:]:
        typer.echo(f"  {line}")


# Registered by `orange.cli.main.build_app`.
CALLBACK = monitor
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("stop", stop_cmd),
    ("status", status),
)
