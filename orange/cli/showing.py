"""``orange task show``, shared by the typer command and the fast path (the scripted
agent and the agents' stop hook run it on every turn)."""

from __future__ import annotations

from orange.cli.context import locate
from orange.cli.output import emit_json, history_object, print_task, task_object
from orange.engine.definitions import is_active, trusted
from orange.engine.elsewhere import running_elsewhere
from orange.home import host_name
from orange.store.history import task_history


def show_task(*, task: str | None, project: str | None, json_out: bool) -> None:
    """Print a task: frontmatter, body and history (one JSON object with ``json_out``)."""
    ref = locate(task, project)
    current = ref.store.get(ref.task_id)
    history = task_history(ref.store, ref.task_id)
    snap = ref.store.snapshot()
    is_trusted = trusted(snap, current)  # a local mark, never committed
    elsewhere = running_elsewhere(current, active=is_active(snap, current), here=host_name())
    # The pool's modules only for `show`: `task update` and `list` never load them.
    from orange.ops.workspaces import local_facts

    facts = local_facts(ref.project, current)  # this host's: never committed
    from orange.runtime.conflicts import predicted

    clashes = predicted(ref.store, snap, ref.project).get(ref.task_id, ())
    if json_out:
        obj = task_object(current, body=current.body) | facts
        if clashes:
            obj["conflicts"] = [clash.as_json() for clash in clashes]
        if not is_trusted:
            obj["trusted"] = False
        if elsewhere:
            obj["running_on"] = elsewhere
        obj["history"] = [history_object(h) for h in history]
        emit_json(obj)
    else:
        shown = current.with_fields(**facts) if facts else current
        print_task(
            shown,
            current.body,
            history,
            trusted=is_trusted,
            elsewhere=elsewhere,
            conflicts=[clash.text(most=20) for clash in clashes],
        )
