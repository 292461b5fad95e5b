"""``orange task merge --ready``: the merge train (`orange.ops.train`)."""

from __future__ import annotations

import typer

from orange import projects
from orange.cli.output import emit_json, visible
from orange.compose import build_engine
from orange.errors import InvalidInput
from orange.ops.train import merge_ready
from orange.projects import open_store


def merge_ready_command(project_name: str | None, json_out: bool) -> None:
    """Merge the project's ready tasks in order; a stop is an error naming the task."""
    project = projects.get(project_name) if project_name else projects.infer()
    engine = build_engine(project, store=open_store(project))
    say = (lambda line: None) if json_out else (lambda line: typer.echo(visible(line)))
    train = merge_ready(engine, project, say=say)
    if json_out:
        emit_json(
            {
                "merged": train.merged,
                "messages": train.messages,
                "stopped": train.stopped or None,
                "waiting": train.waiting,
            }
        )
        if train.stopped:
            raise typer.Exit(1)
        return
    for task_id, blockers in train.waiting.items():
        typer.echo(f"task {task_id} waits for {', '.join(blockers)} (not merged, not ready)")
    if train.stopped:
        merged = f"merged {len(train.merged)} task{'s' if len(train.merged) != 1 else ''}"
        fix = (
            f"`orange task rebase {train.stopped_at}` has its agent resolve it"
            if train.conflict
            else f"fix task {train.stopped_at}"
        )
        raise InvalidInput(
            f"{merged}, then stopped: {visible(train.stopped)}",
            hint=f"{fix}, then run `orange task merge --ready` again",
        )
    if not train.merged:
        typer.echo("no task is ready to merge")
