"""What a teammate's push may put in the tasks ref to stop a reader, all at once: the
TASK.md bombs of `tests.cli.test_bounded` (aliases, depth, a key twice, a huge field,
a huge file), a TASK.md that is not text, a task under an alias-bomb definition that
names this host's session, and many tasks.  For the tests of each entry point that
reads the ref (the monitor, the dashboard's source, ...)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pygit2

from orange import projects
from orange.engine.forgery import start_record
from orange.projects import Project
from orange.store import layout
from orange.store.store import TaskStore
from orange.store.task import Task
from orange.store.tree import apply_writes
from orange.sync.setup import setup
from orange.sync.sync import sync
from tests.cli.test_bounded import HOSTILE
from tests.conftest import Cli, git


def _bomb_definition() -> str:
    """A workflow named "bomb" that is valid in every way but one: a list of 1,000
    hooks, anchored once and used by 40 more transitions through an alias, which makes
    over 120,000 nodes (27 KB of text).  Only the bounded reader's node limit refuses
    it; without that limit it loads (`test_the_bomb_is_valid_but_for_its_aliases`)."""
    hooks = ", ".join(["{action: kill_session}"] * 1000)
    use = '  - {from: doing, to: done, by: [human], when: "review_round == N", hooks: *h}\n'
    return (
        "name: bomb\nversion: 1\ndescription: Valid but for the nodes its aliases make.\n"
        "initial_statuses: [todo]\nstates:\n"
        "  todo: {terminal: false, role: queue}\n  doing: {terminal: false}\n"
        "  done: {terminal: true, role: done}\n  cancelled: {terminal: true, role: cancelled}\n"
        f"transitions:\n  - {{from: todo, to: doing, by: [human], hooks: &h [{hooks}]}}\n"
        + "".join(use.replace("N", str(n)) for n in range(40))
        + "  - {from: todo, to: cancelled, by: [human]}\n"
        + "  - {from: doing, to: cancelled, by: [human]}\n"
    )


BOMB_DEFINITION = _bomb_definition()
NODE_LIMIT = "makes more than 100000 nodes with its aliases"  # what the reader says
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
    bomb = template.with_fields(  # a legal new task of the bomb workflow
        id=BOMB_TASK, workflow="bomb", workflow_rev=rev, tmux_session="proj/bomb", status="todo"
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


def teammate_clone_of(remote: Path, tmp_path: Path) -> Path:
    """A teammate's plain clone of ``remote`` with its tasks ref (no Orange of theirs:
    what they commit there is made by hand)."""
    theirs = tmp_path / "teammate"
    git(tmp_path, "clone", "-q", str(remote), str(theirs))
    git(theirs, "fetch", "-q", "origin", f"{layout.TASKS_REF}:{layout.TASKS_REF}")
    return theirs


def peer_project(cli: Cli, repo: Path, tmp_path: Path) -> tuple[Project, TaskStore, str, Path]:
    """``repo`` as a project syncing with a peer that has no server hook (it takes any
    push), its verification started, one task of it created and synced: the project,
    its store, the task's id and the peer."""
    peer = tmp_path / "peer.git"
    git(tmp_path, "init", "-q", "--bare", str(peer))
    git(repo, "remote", "add", "origin", str(peer))
    git(repo, "push", "-q", "origin", "main")
    project = projects.add(repo)
    store = TaskStore.open(repo)
    start_record(store)
    setup(project, "origin")
    made = cli.ok("task", "create", "b1", "mine", "--no-spawn", "--json", cwd=repo).json()
    sync(store, "origin")
    return project, store, str(made["id"]), peer
