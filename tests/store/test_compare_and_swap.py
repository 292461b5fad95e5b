"""The ref moves only where it was read (compare-and-swap, DESIGN §2): a plain-git move
of the tasks ref from outside Orange's lock, inside a write's window, is never lost."""

from __future__ import annotations

from pathlib import Path

from orange.store import layout
from orange.store.events import Change
from orange.store.store import Snapshot, TaskStore
from tests.conftest import git
from tests.store.helpers import put_task


def test_a_plain_git_move_inside_a_write_loses_neither_commit(repo: Path) -> None:
    store = TaskStore.open(repo)
    put_task(store, "aaaa1111")
    outside: list[str] = []

    def compute(snap: Snapshot) -> Change:
        if not outside:  # first attempt: someone else's commit lands meanwhile
            tree = git(repo, "rev-parse", f"{layout.TASKS_REF}^{{tree}}").strip()
            parent = git(repo, "rev-parse", layout.TASKS_REF).strip()
            made = git(repo, "commit-tree", tree, "-p", parent, "-m", "from outside").strip()
            git(repo, "update-ref", layout.TASKS_REF, made, parent)
            outside.append(made)
        return Change(
            task_id="bbbb2222",
            event="task.created",
            subject="task bbbb2222: created",
            writes={layout.task_path("bbbb2222"): b"---\nid: bbbb2222\n---\n"},
        )

    written = store.commit(compute)
    history = git(repo, "rev-list", layout.TASKS_REF).split()
    assert outside[0] in history
    assert written.commit == history[0]
    assert git(repo, "rev-parse", f"{written.commit}^").strip() == outside[0]
