"""A tasks history written straight with pygit2, for `orange stats`: the test's known
answers and the bench's 10,000 tasks.  Each event is one commit whose message carries
Orange's trailers; the tree holds every task's final TASK.md (stats read messages, and
the tasks as they are now for their harness)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import pygit2

from orange.store import layout
from orange.store.task import Task

START = 1_795_000_000  # seconds since the epoch of the first event


class Event(NamedTuple):
    at: int  # seconds after START
    task: str
    event: str
    move: tuple[str, str] | None = None  # (from, to)
    usage: tuple[int, int, int, str, str, int] | None = None  # in, out, cache, cost, model, s


def write(
    repo: pygit2.Repository, tasks: Sequence[tuple[str, dict[str, str]]], history: Iterable[Event]
) -> str:
    """Commit ``history`` on the tasks ref over a tree of ``tasks`` (id, fields);
    returns the tip."""
    builder = _tree(repo, tasks)
    who = pygit2.Signature("Orange", "orange@example.com", START, 0)
    parents: list[pygit2.Oid] = []
    tip: pygit2.Oid | None = None
    for event in sorted(history, key=lambda e: e.at):
        lines = [f"Orange-Task: {event.task}", f"Orange-Event: {event.event}"]
        if event.move:
            lines += [f"Orange-From: {event.move[0]}", f"Orange-To: {event.move[1]}"]
        if event.usage:
            tokens_in, out, cache, cost, model, seconds = event.usage
            lines += [
                f"Orange-Tokens-In: {tokens_in}",
                f"Orange-Tokens-Out: {out}",
                f"Orange-Tokens-Cache: {cache}",
                f"Orange-Model: {model}",
                f"Orange-Cost-USD: {cost}",
                f"Orange-Agent-Seconds: {seconds}",
            ]
        message = f"task {event.task}: {event.event}\n\n" + "\n".join(lines) + "\n"
        when = pygit2.Signature("Orange", "orange@example.com", START + event.at, 0)
        tip = repo.create_commit(None, who, when, message, builder, parents)
        parents = [tip]
    assert tip is not None
    repo.references.create(layout.TASKS_REF, tip, force=True)
    return str(tip)


def _tree(repo: pygit2.Repository, tasks: Sequence[tuple[str, dict[str, str]]]) -> pygit2.Oid:
    shards: dict[str, pygit2.TreeBuilder] = {}
    for task_id, fields in tasks:
        text = Task({"id": task_id, "project": "shop", **fields}, "").render()
        folder = repo.TreeBuilder()
        folder.insert("TASK.md", repo.create_blob(text.encode()), pygit2.enums.FileMode.BLOB)
        shard = shards.setdefault(layout.shard(task_id), repo.TreeBuilder())
        shard.insert(task_id, folder.write(), pygit2.enums.FileMode.TREE)
    top = repo.TreeBuilder()
    for name, shard in shards.items():
        top.insert(name, shard.write(), pygit2.enums.FileMode.TREE)
    root = repo.TreeBuilder()
    root.insert("tasks", top.write(), pygit2.enums.FileMode.TREE)
    return root.write()
