"""``orange workflow trust NAME|FILE``, ``--list``, ``--revoke HASH|NAME``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from orange.cli.context import current_project
from orange.cli.output import emit_json, visible
from orange.engine import trust as trustset
from orange.errors import InvalidInput
from orange.ops import trust as ops
from orange.projects import open_store


def trust(
    what: Annotated[
        str | None,
        typer.Argument(help="A workflow committed in this project's tasks, or a file."),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    list_: Annotated[
        bool, typer.Option("--list", help="The definitions trusted by hand here.")
    ] = False,
    revoke: Annotated[
        str | None, typer.Option("--revoke", help="Forget one: its hash or name.")
    ] = None,
    project: Annotated[str | None, typer.Option("--project", help="Project name.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Trust a workflow definition on this host, by its content (after showing it).

    A task whose committed definition this host does not trust cannot move here (only
    a cancel); trusting records the SHA-256 of the exact text, never the name.
    """
    if sum((what is not None, list_, revoke is not None)) != 1:
        raise InvalidInput(
            "give one of: a workflow name or file, --list, --revoke HASH|NAME",
            hint="see `orange workflow trust --help`",
        )
    if list_:
        _list(json_out)
    elif revoke is not None:
        entry = ops.revoke(revoke)
        if json_out:
            emit_json({"revoked": entry._asdict()})
        else:
            typer.echo(f"revoked {entry.digest[:12]} ({visible(entry.name)})")
    else:
        assert what is not None
        _trust(what, project, yes=yes, json_out=json_out)


def _trust(what: str, project: str | None, *, yes: bool, json_out: bool) -> None:
    path = Path(what)
    if path.is_file():  # an existing file wins over a committed name (say `./minimal`)
        candidates = [ops.file_candidate(path)]
    else:
        here = current_project(project)
        if here is None:
            raise InvalidInput(
                f"no file {what!r}, and not inside a registered project to find it in",
                hint="run it in the project's checkout, or pass --project",
            )
        candidates = ops.committed_untrusted(open_store(here), here.name, what)
    todo = [c for c in candidates if not trustset.trusted_here(c.text)]
    # Asked only once the name is found and something is left to trust.
    if todo and not yes and not sys.stdin.isatty():
        raise InvalidInput(
            "refusing to trust a workflow without confirmation",
            hint="run it in a terminal, or pass --yes once you have read the definition",
        )
    added: list[trustset.Added] = []
    for candidate in todo:
        if not json_out:
            typer.echo(f"== {visible(candidate.source)} (sha256 {candidate.digest[:12]})")
            typer.echo(visible(ops.shown(candidate)), nl=False)
        if yes or typer.confirm(f"trust this {candidate.name} definition on this host?"):
            added.append(ops.trust_candidate(candidate))
    if json_out:
        emit_json({"trusted": [entry._asdict() for entry in added]})
        return
    if not todo:
        typer.echo(f"nothing to trust: every definition {visible(what)} is trusted here")
    for entry in added:
        typer.echo(f"trusted {entry.digest[:12]} ({visible(entry.name)}) on this host")
    if len(added) < len(todo):
        typer.echo(f"left {len(todo) - len(added)} definition(s) untrusted")


def _list(json_out: bool) -> None:
    entries = trustset.added()
    if json_out:
        emit_json({"trusted": [entry._asdict() for entry in entries]})
        return
    if not entries:
        typer.echo("no definitions trusted by hand (shipped and local ones are always trusted)")
    for entry in entries:
        typer.echo(visible(f"{entry.digest}\t{entry.name}\t{entry.at}\t{entry.source}"))
