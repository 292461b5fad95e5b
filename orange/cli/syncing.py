"""What ``orange sync`` does, without typer: the command runs on the fast path
(`orange.cli.fast`) as well as through typer (`orange.cli.sync`)."""

from __future__ import annotations

from pathlib import Path

from orange import compose
from orange.cli.context import current_project
from orange.cli.output import emit_json
from orange.engine import orphans
from orange.engine.engine import Engine
from orange.errors import NotFound
from orange.projects import Project
from orange.store.store import TaskStore
from orange.sync import remote as git_remote
from orange.sync.setup import setup as setup_refspec
from orange.sync.sync import Synced, sync_project


def run_sync(remote: str | None, project: str | None, setup: bool, json_out: bool) -> None:
    """Sync the project's tasks with ``remote`` (or, with ``setup``, only add the fetch
    refspec), printing what happened."""
    found = current_project(project)
    if found is None:
        raise NotFound("not inside a registered project", hint="pass --project NAME")
    if setup:
        name = remote or git_remote.default_remote(Path(found.path), found.default_branch)
        setup_refspec(found, name)
        if json_out:
            emit_json({"remote": name, "refspec": git_remote.config_refspec(name)})
        else:
            print(f"git fetch {name} now also fetches {git_remote.config_refspec(name)}")
        return
    result = sync_project(found, remote, tmux=compose.tmux)
    result = result._replace(local=(*result.local, *_flag_orphans(found)))
    if json_out:
        emit_json(result.as_json())
        return
    print(describe(result))


def _flag_orphans(project: Project) -> list[str]:
    """A teammate's cancel that came in leaves no task of ours waiting for it unsaid
    (`orange.engine.orphans`)."""
    store = TaskStore(project.repo())

    def engine() -> Engine:  # built only when a task is to be flagged
        from orange.compose import build_engine

        return build_engine(project, actor="sync", store=store)

    return orphans.flag(store, engine)


def describe(result: Synced) -> str:
    lines = [
        f"sync with {result.remote}: {len(result.incoming)} tasks in, "
        f"{len(result.outgoing)} out, {len(result.conflicts)} conflicts"
        + ("" if result.pushed else " (nothing to push)")
    ]
    lines += [f"  in:  {task}" for task in result.incoming]
    lines += [f"  out: {task}" for task in result.outgoing]
    for task, notes in result.conflicts.items():
        lines.append(f"  conflict: {task}: {'; '.join(notes)}")
    lines += [f"  {line}" for line in result.local]
    return "\n".join(lines)
