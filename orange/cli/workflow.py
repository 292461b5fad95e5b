"""``orange workflow ...``: list, show and validate workflows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from orange.cli.output import emit_json
from orange.cli.workflow_json import workflow_object
from orange.cli.workflow_table import print_workflow
from orange.cli.workflow_trust import trust
from orange.engine.catalog import list_workflows, load_named
from orange.engine.loader import load_workflow_file
from orange.engine.mermaid import to_mermaid
from orange.errors import InvalidInput, NotFound

HELP = "List, show, validate and trust workflows."

FORMATS = ("table", "mermaid", "yaml")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def list_(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Shipped and user workflows."""

    entries = list_workflows()
    if json_out:
        emit_json({"workflows": [e._asdict() for e in entries]})
        return
    for entry in entries:
        origin = "user" if entry.is_user else "shipped"
        typer.echo(f"{entry.name}\t{origin}\t{entry.path}")


def show(
    name: Annotated[str, typer.Argument()],
    fmt: Annotated[str, typer.Option("--format", help="table, mermaid or yaml.")] = "table",
    json_out: JsonOpt = False,
) -> None:
    """States and transitions (with gates and hooks) of a workflow.

    With --format yaml: the workflow's file as it is, to start one of your own
    (`orange workflow show minimal --format yaml > my.yml`).  With --json: the workflow
    as one object; with --format mermaid or yaml as well, that text under "mermaid" or
    "yaml".
    """

    if fmt not in FORMATS:
        raise InvalidInput(f"unknown format {fmt!r}", hint="use --format table, mermaid or yaml")
    workflow = load_named(name)
    if fmt == "yaml":
        if json_out:
            emit_json({"name": workflow.name, "yaml": workflow.source_text})
        else:
            typer.echo(workflow.source_text, nl=not workflow.source_text.endswith("\n"))
    elif json_out:
        if fmt == "mermaid":
            emit_json({"name": workflow.name, "mermaid": to_mermaid(workflow)})
        else:
            emit_json(workflow_object(workflow))
    elif fmt == "mermaid":
        typer.echo(to_mermaid(workflow))
    else:
        print_workflow(workflow)


def validate(
    file: Annotated[
        str, typer.Argument(help="A workflow YAML file, or the name of a known workflow.")
    ],
    json_out: JsonOpt = False,
) -> None:
    """Check a workflow file; says what is wrong, with the key path.

    A name that is not a file (`minimal`) checks that shipped or user workflow's file
    (`orange workflow list` says where it is).

    A status role the file does not declare (role, waits_for_human), or who may take a
    transition (by), is inferred and reported as one warning line each on stderr (under
    "warnings" with --json); the file is still valid (exit 0).
    """

    path = Path(file)
    if not path.is_file():
        known = {entry.name: entry.path for entry in list_workflows()}
        if file not in known:
            raise NotFound(
                f"no file {file!r}, nor a workflow of that name",
                hint=f"known workflows: {', '.join(known)}",
            )
        path = Path(known[file])
    workflow = load_workflow_file(path, source=str(path))
    if json_out:
        emit_json(
            {
                "path": str(path),
                "valid": True,
                "name": workflow.name,
                "states": len(workflow.states),
                "transitions": len(workflow.transitions),
                "warnings": list(workflow.warnings),
            }
        )
        return
    for note in workflow.warnings:
        typer.echo(f"warning: {note}", err=True)
    typer.echo(
        f"{path}: valid workflow {workflow.name!r} "
        f"({len(workflow.states)} states, {len(workflow.transitions)} transitions)"
    )


# Registered by `orange.cli.main.build_app`.
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("list", list_),
    ("show", show),
    ("validate", validate),
    ("trust", trust),
)
