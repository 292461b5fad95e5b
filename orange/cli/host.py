"""``orange host ...``: the other machines this one drives over SSH (DESIGN §11)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from orange import projects
from orange.cli.context import current_project
from orange.cli.engine import report_outcome
from orange.cli.output import emit_json
from orange.errors import InvalidInput
from orange.hosts import probe, roster
from orange.hosts.holdings import host_rows
from orange.hosts.nudge import nudge
from orange.hosts.roster import Host
from orange.hosts.start import HOST_SYNC_INTERVAL, start_here
from orange.projects import Project
from orange.runtime.ssh import HostUnreachable, check_env, check_target

HELP = "Other machines that run this project's tasks, reached over SSH."

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
ProjectOpt = Annotated[str | None, typer.Option("--project", help="Project name.")]


def add(
    name: Annotated[str, typer.Argument(help="A name for the host, used here only.")],
    target: Annotated[str, typer.Argument(help="What ssh connects to: user@host or an alias.")],
    project: ProjectOpt = None,
    ssh_config: Annotated[
        str | None, typer.Option("--ssh-config", help="An ssh_config file for this host (-F).")
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option("--env", help="KEY=VALUE the host's orange runs with (repeatable)."),
    ] = None,
    orange: Annotated[
        str, typer.Option("--orange", help="The orange program there (default: orange).")
    ] = "orange",
    json_out: JsonOpt = False,
) -> None:
    """Register a host for a project, after checking over SSH what it needs."""
    proj = _project(project)
    existing = {h.name: h for h in roster.load_all()}.get(roster.check_name(name))
    host = Host(
        name=name,
        target=check_target(target),
        # Absolute: later ssh calls (the nudge, the monitor) run from other folders.
        ssh_config=str(Path(ssh_config).absolute()) if ssh_config else None,
        env=check_env(env or []),
        orange=orange or "orange",
        projects=existing.projects if existing else (),
        pools=existing.pools if existing else (),
    )
    if ssh_config and not Path(ssh_config).is_file():
        raise InvalidInput(f"no ssh config file {ssh_config}", hint="give --ssh-config a file")
    try:
        answer = probe.ask(host, remember=False)  # the registered record is not these
    except HostUnreachable as exc:
        if existing is not None:
            raise
        raise HostUnreachable(  # nothing saved: there is no host to `host check` yet
            exc.message, hint=f"nothing registered; once ssh reaches {target}, run this again"
        ) from None
    checked = probe.missing(host, proj, answer)
    roster.save(checked.host)
    turned_on = proj.sync_interval <= 0
    if turned_on:
        projects.update(proj.name, sync_interval=HOST_SYNC_INTERVAL)
    if json_out:
        emit_json(_checked_json(checked, proj))
    else:
        typer.echo(f"host {name} registered for project {proj.name} ({target})")
        if turned_on:
            typer.echo(f"automatic sync of {proj.name} turned on (every {HOST_SYNC_INTERVAL}s)")
        _say_missing(checked)
    if checked.missing:
        raise typer.Exit(1)


def check(
    name: Annotated[str | None, typer.Argument(help="The host (default: every one).")] = None,
    project: ProjectOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Check over SSH what a host needs to run the project's tasks."""
    proj = _project(project)
    hosts = [roster.get(roster.check_name(name))] if name else roster.load_all()
    if not hosts:
        raise InvalidInput("no host registered", hint="add one with `orange host add`")
    results = []
    failed = False
    for host in hosts:
        try:
            checked = probe.missing(host, proj, probe.ask(host))
        except (HostUnreachable, InvalidInput) as exc:
            failed = True
            results.append({"name": host.name, "ok": False, "missing": [str(exc)]})
            if not json_out:
                typer.echo(f"host {host.name}: {exc}")
            continue
        roster.save(checked.host)
        failed = failed or bool(checked.missing)
        results.append(_checked_json(checked, proj))
        if not json_out:
            _say_missing(checked)
    if json_out:
        emit_json({"hosts": results})
    if failed:
        raise typer.Exit(1)


def list_(project: ProjectOpt = None, json_out: JsonOpt = False) -> None:
    """The registered hosts: pool use and agents from the ref, reachability."""
    proj = current_project(project)
    rows = host_rows(proj)
    if json_out:
        emit_json({"hosts": rows})
        return
    if not rows:
        typer.echo("no hosts registered (add one with `orange host add NAME SSH_TARGET`)")
        return
    for row in rows:
        where = f"{row['name']} ({row['target']}, records itself as {row['reports_as'] or '?'})"
        typer.echo(where)
        for pool in row["pools"]:
            agents = ", ".join(f"{a} {n}" for a, n in pool["running"].items()) or "none"
            typer.echo(
                f"  {pool['project']}: {pool['used']} of {pool['size']} worktrees in use; "
                f"agents running: {agents}"
            )
        typer.echo(f"  agents installed: {', '.join(row['agents']) or 'none reported'}")
        if row["unreachable_since"]:
            typer.echo(f"  host unreachable since {row['unreachable_since']}")


def remove(
    name: Annotated[str, typer.Argument(help="The host.")], json_out: JsonOpt = False
) -> None:
    """Forget a host (its tasks keep running there; `orange task take` moves them)."""
    gone = roster.remove(roster.check_name(name))
    if json_out:
        emit_json({"removed": gone.name})
    else:
        typer.echo(f"host {gone.name} removed")


def probe_(json_out: JsonOpt = False) -> None:
    """What another host's Orange needs to know of this one (asked over SSH)."""
    report = probe.report()
    if json_out:
        emit_json(report)
    else:
        typer.echo(f"orange {report['version']} on {report['host']}")


def start(
    task: Annotated[str, typer.Argument(help="Task id.")],
    project: Annotated[str, typer.Option("--project", help="Project name.")],
    json_out: JsonOpt = False,
) -> None:
    """Sync, then start a task here or take it over (asked over SSH by another host)."""
    report_outcome(start_here(project, task), json_out)


def nudge_(project: Annotated[str, typer.Option("--project", help="Project name.")]) -> None:
    """Push the project's tasks and have its hosts sync now (started in the background
    after a person's command changed its tasks: `orange.hosts.nudge`)."""
    nudge(projects.get(project), lambda line: typer.echo(f"orange: {line}", err=True))


def _project(name: str | None) -> Project:
    found = current_project(name)
    if found is None:
        raise InvalidInput("not inside a registered project", hint="pass --project NAME")
    return found


def _checked_json(checked: probe.Checked, project: Project) -> dict[str, object]:
    return {
        **checked.host.as_json(),
        "project": project.name,
        "free": checked.free,
        "missing": list(checked.missing),
        "ok": not checked.missing,
    }


def _say_missing(checked: probe.Checked) -> None:
    name = checked.host.name
    if not checked.missing:
        typer.echo(f"host {name}: ready ({checked.free} free worktrees)")
    for line in checked.missing:
        typer.echo(f"host {name}: missing: {line}")


# `host` subcommands, registered by `orange.cli.main.build_app`.
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("add", add),
    ("list", list_),
    ("check", check),
    ("remove", remove),
    ("probe", probe_),
    ("start", start),
    ("nudge", nudge_),
)
HIDDEN = ("probe", "start", "nudge")  # run by another host's Orange over SSH, or by this one
