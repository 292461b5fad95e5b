"""What a teammate's push may put in the tasks ref to stop a reader, all at once: the
TASK.md bombs of `tests.cli.test_bounded` (aliases, depth, a key twice, a huge field,
a huge file), a TASK.md that is not text, a task under an alias-bomb definition that
names this host's session, and many tasks.  For the tests of each entry point that
reads the ref (the monitor, the dashboard's source, ...)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pygit2

from orange.store import layout
from orange.store.task import Task
from orange.store.tree import apply_writes
from tests.cli.test_bounded import HOSTILE
from tests.engine.test_workflow_load import ALIAS_BOMB

BOMB_DEFINITION = f"name: bomb\nversion: 1\n{ALIAS_BOMB}"
BINARY = "binaaaaa"
BOMB_TASK = "bombaaaa"
# Why each hostile file is one broken task, in the listing's words.
BROKEN = {
    **{task_id: why for task_id, (_header, why) in HOSTILE.items()},
    BINARY: "not UTF-8",
}


def hostile_writes(template: Task, many: int) -> dict[str, bytes]:
    """The hostile files, and ``many`` legal copies of ``template`` (ids ``many0000``
    on), by path."""
    writes: dict[str, bytes] = {}
    for task_id, (header, _why) in HOSTILE.items():
        body = "x" * (2 * 1024 * 1024) if task_id == "hugeaaaa" else ""
        writes[layout.task_path(task_id)] = f"---\n{header}---\n{body}".encode()
    writes[layout.task_path(BINARY)] = b"---\nid: binaaaaa\n\xff\xfe\x00---\n" + bytes(range(256))
    rev = hashlib.sha1(BOMB_DEFINITION.encode()).hexdigest()[:10]
    bomb = template.with_fields(
        id=BOMB_TASK, workflow="bomb", workflow_rev=rev, tmux_session="proj/bomb"
    )
    writes[layout.workflow_path("bomb")] = BOMB_DEFINITION.encode()
    writes[layout.task_path(BOMB_TASK)] = bomb.render().encode()
    for n in range(many):
        task_id = f"many{n:04d}"
        writes[layout.task_path(task_id)] = template.with_fields(id=task_id).render().encode()
    return writes


def commit_by_hand(repo: Path, writes: dict[str, bytes | None], message: str = "hostile") -> str:
    """A commit of ``writes`` on the tasks ref made without Orange (as a fetch or
    ``git update-ref`` brings one); its id."""
    pygit = pygit2.Repository(str(repo))
    parent = pygit.references[layout.TASKS_REF].peel(pygit2.Commit)
    tree = apply_writes(pygit, parent.tree, writes)
    assert tree is not None
    who = pygit2.Signature("Mallory", "mallory@example.com")
    commit = pygit.create_commit(None, who, who, message, tree, [parent.id])
    pygit.references[layout.TASKS_REF].set_target(commit)
    return str(commit)
