"""``orange monitor``: react to dead agents (also started in the background)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from orange.cli.output import emit_json
from orange.errors import OrangeError
from orange.monitor.loop import PassReport, loop, pass_or_note
from orange.runtime.watcher import LEFT_ALONE, STOPPED_SAID, read_status, start, stop, stopped_at

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
        since = stopped_at()
        if since is not None:  # (also a background start that lost a race with a stop)
            raise OrangeError(
                f"the monitor is stopped on this host (`orange monitor stop` at {since})",
                hint="`orange monitor start` resumes it",
            )
        raise typer.Exit(loop())
    if task is None:
        # Many at once when many agents die together: one pass at a time covers them all.
        from orange.monitor.once import run_once

        coalesced = run_once()
        report = coalesced if coalesced is not None else PassReport()
    else:
        report = pass_or_note(task)
    if json_out:
        emit_json(
            {
                "checked": report.checked,
                "dead": report.dead,
                "actions": report.actions,
                "stopped": report.stopped,
            }
        )
        return
    for line in report.actions:
        typer.echo(line)
    if report.stopped:
        typer.echo(STOPPED_SAID, err=True)


def start_cmd(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Start this host's monitor loop in the background, ending an `orange monitor stop`;
    its first pass handles the agents that died meanwhile."""
    started = start()
    if json_out:
        emit_json({"started": started == "started", "running": started != "off"})
    elif started == "off":
        typer.echo("monitor: not started (ORANGE_MONITOR is off in this environment)")
    else:
        typer.echo("monitor started" if started == "started" else "monitor: already running")


def stop_cmd(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Stop this host's monitor loop; it stays stopped (agents that die are left alone)
    until `orange monitor start`."""
    stopped = stop()
    if json_out:
        emit_json({"stopped": stopped})
    else:
        typer.echo("monitor stopped" if stopped else "monitor: not running")
        typer.echo(f"it stays stopped until `orange monitor start`: {LEFT_ALONE}")


def status(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Whether the monitor runs, since when, what it did last, how far behind its
    verification of new task commits is."""

    data = read_status()
    if json_out:
        emit_json(data)
        return
    if data.get("stopped_at") and not data.get("running"):
        typer.echo(f"monitor: stopped by `orange monitor stop` at {data['stopped_at']}")
        typer.echo(f"  {LEFT_ALONE} until `orange monitor start`")
    elif not data.get("running"):
        typer.echo("monitor: not running")
        if data.get("last_pass"):
            typer.echo(f"last pass: {data['last_pass']}")
    else:
        typer.echo(f"monitor: running (pid {data.get('pid')}) since {data.get('since')}")
        if data.get("last_pass"):
            typer.echo(f"last pass: {data['last_pass']}, active tasks: {data.get('active_tasks')}")
        else:
            typer.echo("first pass under way")
        behind = data.get("unverified_commits") or {}
        for name, left in sorted(behind.items()):
            typer.echo(f"verification behind: {left} new task commits of {name} left to verify")
    for line in data.get("last_actions", [])[-10:]:
        typer.echo(f"  {line}")


# Registered by `orange.cli.main.build_app`.
CALLBACK = monitor
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("start", start_cmd),
    ("stop", stop_cmd),
    ("status", status),
)
