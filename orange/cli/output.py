"""Rendering results for people and for machines (``--json``)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from orange.home import orange_home
from orange.store.task import BrokenTask, Task

if TYPE_CHECKING:
    from orange.store.history import HistoryEntry


def emit_json(payload: Mapping[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")


def task_object(task: Task, *, body: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = dict(task.fields)
    workspace = task.str_field("workspace")
    if workspace:
        out["workspace_path"] = str(orange_home() / "workspaces" / workspace)
    if body is not None:
        out["body"] = body
    return out


def untrusted_note(task: Task) -> str:
    """The local mark of a task whose committed definition this host does not trust."""
    return (
        f"untrusted: this host does not trust the committed definition of workflow "
        f"{task.workflow}, so the task cannot move here (only a cancel); review and "
        f"trust it with `orange workflow trust {task.workflow}`"
    )


def broken_object(task: BrokenTask) -> dict[str, Any]:
    return {"id": task.id, "broken": True, "path": task.path, "error": task.error}


def history_object(entry: HistoryEntry) -> dict[str, Any]:
    return {
        "event": entry.event,
        "from": entry.from_status,
        "to": entry.to_status,
        "actor": entry.actor,
        "at": entry.at,
        "commit": entry.commit,
        "subject": entry.subject,
    }


# C0 and C1 control characters and DEL, except tab and newline (compiled when first
# shown: `task update` prints no task data).
_CONTROL = "[\x00-\x08\x0b-\x1f\x7f-\x9f]"


def visible(text: str) -> str:
    """Task data for a terminal: control characters (an escape sequence in a summary,
    say) are shown as ``\\x1b``, never sent raw (DESIGN §8)."""
    return re.sub(_CONTROL, lambda match: f"\\x{ord(match.group()):02x}", text)


def task_table(
    tasks: Iterable[Task | BrokenTask],
    *,
    show_project: bool,
    untrusted: frozenset[str] = frozenset(),
    notes: Mapping[str, str] | None = None,
    conflicts: Mapping[str, list[str]] | None = None,
) -> None:
    """``untrusted``: ids of tasks whose definition this host does not trust (marked);
    ``notes``: this host's word on a task, by id (setting up, running on HOST);
    ``conflicts``: the conflicts a task's branch would meet, by id (a CONFLICTS column,
    shown when a listed task has any)."""
    # rich: for what people read; `--json`, which agents read, never loads it.
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    def cell(text: str) -> str:
        return escape(visible(text))

    table = Table(box=None, pad_edge=False, show_edge=False)
    table.add_column("ID", style="bold")
    if show_project:
        table.add_column("PROJECT")
    table.add_column("STATUS")
    table.add_column("BRANCH")
    table.add_column("SUMMARY", overflow="fold")
    tasks = list(tasks)
    costs = {t.id: cost_cell(t) for t in tasks if isinstance(t, Task)}
    priced = any(costs.values())  # a COST column when a listed task has a ledger
    if priced:
        table.add_column("COST", justify="right")
    if conflicts:
        table.add_column("CONFLICTS", style="red", overflow="fold")
    count = 0
    for task in tasks:
        count += 1
        if isinstance(task, BrokenTask):
            cells = [cell(task.id), "?"] if show_project else [cell(task.id)]
            cells += ["[red]broken[/red]", cell(task.path), cell(task.error)]
            cells += [""] if priced else []
            table.add_row(*cells, *([""] if conflicts else []))
            continue
        status = cell(task.status)
        if task.str_field("attention"):
            status = f"{status} [yellow]![/yellow]"
        summary = cell(task.summary) if task.summary else "[dim](no summary)[/dim]"
        if task.str_field("attention"):
            summary += f"\n[yellow]attention: {cell(task.str_field('attention'))}[/yellow]"
        if notes and task.id in notes:
            status = f"{status} [cyan]{cell(notes[task.id])}[/cyan]"
        if task.id in untrusted:
            status = f"{status} [red]untrusted[/red]"
            summary += f"\n[red]{cell(untrusted_note(task))}[/red]"
        cells = [cell(task.id)] + ([cell(task.project)] if show_project else [])
        clash = "\n".join(cell(text) for text in (conflicts or {}).get(task.id, []))
        cells += [status, cell(task.branch), summary, *([costs[task.id]] if priced else [])]
        table.add_row(*cells, *([clash] if conflicts else []))
    console = Console(highlight=False)
    if count == 0:
        console.print("no tasks")
    else:
        console.print(table)


def cost_cell(task: Task) -> str:
    """The ledger's cost of a task as a list shows it (`orange.engine.ledger.cost_label`)."""
    from orange.engine.ledger import cost_label  # only a table of people's reading shows it

    return cost_label(task.fields)


def print_task(
    task: Task,
    body: str,
    history: list[HistoryEntry],
    *,
    trusted: bool = True,
    elsewhere: str | None = None,
    conflicts: Iterable[str] = (),
) -> None:
    # rich: for what people read; `--json`, which agents read, never loads it.
    from rich.console import Console
    from rich.markup import escape

    console = Console(highlight=False)

    def shown(text: str) -> str:
        return escape(visible(text))

    console.print(f"[bold]task {task.id}[/bold]  {shown(task.summary or '(no summary)')}")
    for key, value in task.fields.items():
        if value is None or value == "" or key in ("id", "summary"):
            continue
        style = "yellow" if key == "attention" else ""
        text = shown(str(value))
        console.print(f"  {key}: [{style}]{text}[/{style}]" if style else f"  {key}: {text}")
    if elsewhere:
        console.print(
            f"  [cyan]running on {shown(elsewhere)}[/cyan] (never started or stopped here)"
        )
    if not trusted:
        console.print(f"  [red]{shown(untrusted_note(task))}[/red]")
    for clash in conflicts:
        console.print(f"  [red]would conflict with {shown(clash)}[/red]")
    if body.strip():
        console.print()
        console.print(shown(body.rstrip("\n")))
    runs = [entry for entry in history if "Orange-Tokens-In" in entry.trailers]
    if runs:  # the ledger's records (`orange.engine.ledger`), one per agent run or move
        console.print()
        console.print("[bold]usage[/bold]  (when, model, tokens in/out/cache, cost, agent time)")
        for entry in runs:
            console.print(f"  {entry.at}  {shown(usage_line(entry.trailers))}")
    if history:
        console.print()
        console.print("[bold]history[/bold]")
        for entry in history:
            console.print(f"  {entry.at}  {shown(entry.actor):<8} {shown(entry.subject)}")


def usage_line(trailers: Mapping[str, str]) -> str:
    """One usage record as `task show` lists it."""
    cost = trailers.get("Orange-Cost-USD", "")
    shown_cost = f"${cost}" if cost and cost != "unknown" else "cost unknown"
    seconds = trailers.get("Orange-Agent-Seconds", "0")
    minutes = int(seconds) // 60 if seconds.isdigit() and len(seconds) < 12 else 0
    return (
        f"{trailers.get('Orange-Model', '?')[:40]}  {trailers.get('Orange-Tokens-In', '?')}/"
        f"{trailers.get('Orange-Tokens-Out', '?')}/{trailers.get('Orange-Tokens-Cache', '?')}"
        f"  {shown_cost}  {minutes} min"
    )
