"""``orange task ...``: create, list, show and change tasks."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from orange import projects
from orange.cli.context import locate
from orange.cli.create import create_and_report
from orange.cli.listing import list_tasks
from orange.cli.output import emit_json, history_object, task_object, visible
from orange.cli.showing import show_task
from orange.cli.update import update_task
from orange.compose import process_caller, runtime
from orange.engine.dependencies import parse as parse_after
from orange.engine.gates import section as get_section
from orange.engine.sections import edit_section
from orange.engine.tasks import check_deletable, delete_task
from orange.errors import InvalidInput, NotFound
from orange.ops.create import Harnesses
from orange.store.history import task_history

HELP = "Create, list, show and change tasks."

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
ProjectOpt = Annotated[str | None, typer.Option("--project", help="Project name.")]
# `task update`, `show` and `edit` find the task from the worktree they run in, as the
# skill tells agents (issue 25: a worker's `task edit --section ...` was refused).
TaskArg = Annotated[str | None, typer.Argument(help="Task id (default: this workspace's).")]
AfterOpt = Annotated[
    str | None,
    typer.Option("--after", help="ID[,ID...]: start only once those tasks are merged."),
]


def _read_text(source: str) -> str:
    """Text from a file or stdin (``-``): UTF-8, or a one-line error."""
    if source == "-":
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        where = "standard input"
    else:
        path = Path(source)
        if not path.is_file():
            raise NotFound(f"no file {source!r}")
        data, where = path.read_bytes(), source
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{where} is not UTF-8 text (byte {exc.start})", hint="convert it to UTF-8"
        ) from None


def create(
    branch: Annotated[
        str | None, typer.Argument(help="Branch (default orange-tasks/<id>).")
    ] = None,
    summary: Annotated[str, typer.Argument(help="What to do (empty: clarification).")] = "",
    context: Annotated[str | None, typer.Option("--context", help="'-' reads stdin.")] = None,
    status: Annotated[str | None, typer.Option("--status", help="Initial status.")] = None,
    harness: Annotated[str | None, typer.Option("--harness", help="Agent to run.")] = None,
    review_harness: Annotated[
        str | None, typer.Option("--review-harness", help="Harness of the reviewer.")
    ] = None,
    effort: Annotated[str | None, typer.Option("--effort", help="Worker effort level.")] = None,
    review_effort: Annotated[
        str | None, typer.Option("--review-effort", help="Effort level of the reviewer.")
    ] = None,
    project: ProjectOpt = None,
    no_spawn: Annotated[bool, typer.Option("--no-spawn", help="Do not start an agent.")] = False,
    offline: Annotated[
        bool,
        typer.Option("--offline", help="Start without claiming the task on the sync remote."),
    ] = False,
    base: Annotated[
        str | None,
        typer.Option("--base", help="Start the branch from BRANCH and merge it there."),
    ] = None,
    after: AfterOpt = None,
    budget: Annotated[
        str | None,
        typer.Option("--budget", help="Dollars it may cost; past them its agent stops."),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option("--host", help="Start it on this registered host (auto: the freest)."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Create a task, and start its agent unless --no-spawn (or it waits, --after)."""

    proj = projects.infer(name=project)
    context_text = _read_text(context) if context is not None else None
    if host is not None:
        if no_spawn or offline:
            raise InvalidInput(
                "--host starts the task on that host: it takes neither --no-spawn nor --offline"
            )
        from orange.cli.hosting import create_on_host  # SSH and sync: for --host only

        create_on_host(
            proj,
            host,
            summary=summary,
            branch=branch or None,
            context=context_text,
            status=status,
            agents=Harnesses(
                harness or "", review_harness or "", effort or "", review_effort or ""
            ),
            json_out=json_out,
            base=base,
            after=parse_after(after) if after is not None else None,
            budget=budget,
        )
        return
    create_and_report(
        proj,
        summary=summary,
        branch=branch or None,
        context=context_text,
        status=status,
        agents=Harnesses(harness or "", review_harness or "", effort or "", review_effort or ""),
        spawn=not no_spawn,
        json_out=json_out,
        base=base,
        offline=offline,
        after=parse_after(after) if after is not None else None,
        budget=budget,
    )


def list_(
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            help="Only this status.  Broken tasks have none: `task list` without --status "
            "lists them.",
        ),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Include done and cancelled.")] = False,
    all_projects: Annotated[
        bool, typer.Option("--all-projects", help="Tasks of every registered project.")
    ] = False,
    body: Annotated[bool, typer.Option("--body", help="Add bodies to --json.")] = False,
    tree: Annotated[
        bool, typer.Option("--tree", help="Each task under the tasks it waits for (--after).")
    ] = False,
    project: ProjectOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List tasks, newest activity first; broken ones (a TASK.md that does not parse)
    first, unless --status filters them out."""

    list_tasks(
        status=status,
        all_=all_,
        all_projects=all_projects,
        body=body,
        project=project,
        json_out=json_out,
        tree=tree,
    )


def show(task: TaskArg = None, project: ProjectOpt = None, json_out: JsonOpt = False) -> None:
    """Show a task: frontmatter, body and history."""

    show_task(task=task, project=project, json_out=json_out)


def log(task: TaskArg = None, project: ProjectOpt = None, json_out: JsonOpt = False) -> None:
    """A task's history, from the commits of the tasks ref."""

    ref = locate(task, project)
    history = task_history(ref.store, ref.task_id)
    if json_out:
        emit_json({"id": ref.task_id, "history": [history_object(h) for h in history]})
        return
    for entry in history:
        line = f"{entry.commit[:10]}  {entry.at}  {entry.actor:<8} {entry.subject}"
        typer.echo(visible(line))


def update(
    task: TaskArg = None,
    summary: Annotated[str | None, typer.Option("--summary", help="New one-line summary.")] = None,
    status: Annotated[str | None, typer.Option("--status", help="Move to this status.")] = None,
    branch: Annotated[
        str | None,
        typer.Option("--branch", help="New branch; with no value, adopt the worktree's branch."),
    ] = None,
    project: ProjectOpt = None,
    offline: Annotated[
        bool,
        typer.Option("--offline", help="Start without claiming the task on the sync remote."),
    ] = False,
    after: AfterOpt = None,
    no_after: Annotated[
        bool, typer.Option("--no-after", help="Wait for no other task any more.")
    ] = False,
    budget: Annotated[
        str | None,
        typer.Option("--budget", help="Dollars it may cost (the ledger); off: no budget."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Change a task's summary, branch, dependencies (--after) or budget, or move it
    (--status) through its workflow."""

    update_task(
        task=task,
        summary=summary,
        status=status,
        branch=branch,
        project=project,
        json_out=json_out,
        offline=offline,
        after=None if after is None else parse_after(after),
        no_after=no_after,
        budget=budget,
    )


def edit(
    task: TaskArg = None,
    section: Annotated[
        str | None, typer.Option("--section", help="e.g. Notes or '## Notes'.")
    ] = None,
    file: Annotated[str | None, typer.Option("--file", help="New text; '-' reads stdin.")] = None,
    project: ProjectOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Replace one body section or the whole body (opens $EDITOR without --file)."""

    ref = locate(task, project)
    heading = _heading(section) if section is not None else None  # '' is refused
    if file is not None:
        text = _read_text(file)
    else:
        current = ref.store.get(ref.task_id)
        old = (get_section(current.body, heading) or "") if heading else current.body
        text = _run_editor(old)
    updated = edit_section(
        ref.store, ref.task_id, heading, text, runtime().copies, caller=process_caller()
    )
    if json_out:
        emit_json(task_object(updated, body=updated.body))
    else:
        typer.echo(f"task {updated.id}: {heading or 'body'} saved")


def _heading(section: str) -> str:
    name = section.strip().lstrip("#").strip()

    if not name or "\n" in name:
        raise InvalidInput(
            f"section {section!r} is not a heading name", hint="e.g. --section Notes"
        )
    return f"## {name}"


def _run_editor(text: str) -> str:

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        raise InvalidInput("no $EDITOR set", hint="set EDITOR or pass --file F (or - for stdin)")
    with tempfile.NamedTemporaryFile("w+", suffix=".md", delete=False) as handle:
        handle.write(text)
        path = handle.name
    try:
        result = subprocess.run([*shlex.split(editor), path], check=False)
        if result.returncode != 0:
            raise InvalidInput(f"editor exited with {result.returncode}; nothing saved")
        with open(path) as handle:
            return handle.read()
    finally:
        os.unlink(path)


def delete(
    task: Annotated[str, typer.Argument()],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    project: ProjectOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Delete a done or cancelled task (its history stays in git)."""

    ref = locate(task, project)
    current = ref.store.get(ref.task_id)
    caller = process_caller()
    check_deletable(ref.store.snapshot(), current, caller)  # before asking; checked again
    if not yes:
        if not sys.stdin.isatty():
            raise InvalidInput("refusing to delete without confirmation", hint="pass --yes")
        if not typer.confirm(f"delete task {current.id} ({current.summary})?"):
            raise typer.Exit(1)
    deleted = delete_task(ref.store, ref.task_id, caller=caller)
    if json_out:
        emit_json({"deleted": deleted.id})
    else:
        typer.echo(f"deleted task {deleted.id} (its history stays in refs/orange/tasks)")


# `task` subcommands, registered by `orange.cli.main.build_app`.
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("create", create),
    ("list", list_),
    ("show", show),
    ("log", log),
    ("update", update),
    ("edit", edit),
    ("delete", delete),
)
