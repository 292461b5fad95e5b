"""The sync merge of two tips of the tasks ref (DESIGN §7): a pure function of the
commits (base, ours, theirs), so every clone and the server compute the same tree.

Files changed on one side only take that side; a task changed on both sides is merged
by `orange.store.taskmerge`; a ``meta/workflows/<name>.yml`` committed with different
texts keeps the text with the smaller SHA-1 under its name and the other as
``<name>@<rev>.yml`` (``rev``: its SHA-1's first ten digits, as Orange names a later
definition, so a task recording that revision still finds it); any other file keeps the
larger content.  The result is a `Plan`: the writes over ``ours`` that give the merged
tree (also how the checker verifies a merge commit without writing objects), and what
came in, went out and conflicted, by task id.  A file taken from their side is written
as the id of their blob: nothing of it is read or written again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import pygit2

from orange.store import layout
from orange.store.taskmerge import Rules, Side, merge_task
from orange.store.tree import Content, Subtree, read_tree
from orange.store.treediff import Listings, changes

VERSION = "1"  # the ``Orange-Merge`` trailer: the version of these rules


class Plan(NamedTuple):
    writes: dict[str, Content]  # over ours: path → content or blob id (None deletes)
    incoming: tuple[str, ...]  # tasks changed on their side since the base
    outgoing: tuple[str, ...]  # tasks changed on our side since the base
    conflicts: dict[str, tuple[str, ...]]  # task id → what needed a rule
    # Task folders changed on their side only: the writes under one turn ours into
    # theirs (`tree_writes`: the merged tree without rebuilding them).
    folders: frozenset[str]

    def tree_writes(self, theirs: pygit2.Tree) -> dict[str, Content | Subtree]:
        """`writes`, each of `folders` written as ``theirs``'s tree at once."""
        taken: dict[str, Content | Subtree] = {}
        for folder in sorted(self.folders):
            tree = read_tree(theirs, folder)
            if tree is not None:  # (a folder they deleted is the writes' deletes)
                taken[folder] = Subtree(tree.id)
        kept: dict[str, Content | Subtree] = {
            path: content for path, content in self.writes.items() if _folder(path) not in taken
        }
        return kept | taken

    def subject(self, remote: str) -> str:
        came, went, n = len(self.incoming), len(self.outgoing), len(self.conflicts)
        return (
            f"sync with {remote}: {came} task{'' if came == 1 else 's'} in, {went} out, "
            f"{n} conflict{'' if n == 1 else 's'}"
        )


def merge_base(
    repo: pygit2.Repository, ours: pygit2.Oid, theirs: pygit2.Oid
) -> pygit2.Commit | None:
    base = repo.merge_base(ours, theirs)
    return None if base is None else repo[base].peel(pygit2.Commit)


def plan(
    repo: pygit2.Repository,
    ours: pygit2.Commit,
    theirs: pygit2.Commit,
    rules: Rules,
    walked: Walked | None = None,
) -> Plan:
    """How ``theirs`` merges into ``ours`` against their merge base (``walked``: what
    a walk over some of the commits found already, `Walked`)."""
    base = merge_base(repo, ours.id, theirs.id)
    base_tree = base.tree if base is not None else None
    listings = Listings(repo) if walked is None else walked.listings
    mine = dict(_changed(listings, base_tree, ours.tree))  # path → blob id (None: deleted)
    yours = dict(_changed(listings, base_tree, theirs.tree))
    both = sorted(p for p in mine.keys() & yours.keys() if mine[p] != yours[p])
    task_paths = [p for p in both if p.startswith("tasks/")]
    sides = (
        last_touches(repo, ours, base, task_paths, walked),
        last_touches(repo, theirs, base, task_paths, walked),
    )
    # Changed on their side only: ours still holds the base's, so theirs differs from it.
    writes: dict[str, Content] = {p: yours[p] for p in yours.keys() - mine.keys()}
    folders = {_folder(p) for p in writes} - {_folder(p) for p in mine}
    merged_writes: dict[str, bytes | None] = {}
    conflicts: dict[str, tuple[str, ...]] = {}
    for path in both:
        old, one, two = (
            _read(repo, base_tree, path),
            _data(repo, mine[path]),
            _data(repo, yours[path]),
        )
        if path.startswith("tasks/"):
            merged = merge_task(old, one, two, (sides[0][path], sides[1][path]), rules, path)
            merged_writes[path] = merged.data
            if merged.conflicts:
                conflicts[_task_of(path)] = merged.conflicts
        else:
            merged_writes.update(_merge_other(path, one, two))
    writes.update((p, d) for p, d in merged_writes.items() if _read(repo, ours.tree, p) != d)
    # A task changed on both sides came in and went out (its conflicts are flagged).
    incoming = sorted({_task_of(p) for p in yours if p.startswith("tasks/")})
    outgoing = sorted({_task_of(p) for p in mine if p.startswith("tasks/")})
    only_theirs = frozenset(f for f in folders if f is not None)
    return Plan(
        dict(sorted(writes.items())), tuple(incoming), tuple(outgoing), conflicts, only_theirs
    )


def arrival(repo: pygit2.Repository, theirs: pygit2.Commit) -> Plan:
    """What comes in when there was no local ref: every task of ``theirs``."""
    tasks = sorted(
        {
            _task_of(p)
            for p, _ in _changed(Listings(repo), None, theirs.tree)
            if p.startswith("tasks/")
        }
    )
    return Plan({}, tuple(tasks), (), {}, frozenset())


def _folder(path: str) -> str | None:
    """The task folder ``tasks/<shard>/<id>`` a path is in (None: none)."""
    parts = path.split("/", 3)
    return "/".join(parts[:3]) if len(parts) == 4 and parts[0] == "tasks" else None


def _task_of(path: str) -> str:
    return path.split("/")[2] if path.count("/") >= 3 else path


def _merge_other(path: str, ours: bytes | None, theirs: bytes | None) -> dict[str, bytes | None]:
    texts = sorted((t for t in (ours, theirs) if t is not None), key=_sha1)
    if not texts:
        return {path: None}
    prefix = f"{layout.WORKFLOWS_DIR}/"
    if path.startswith(prefix) and "@" not in path and path.endswith(".yml") and len(texts) == 2:
        name = path.removeprefix(prefix).removesuffix(".yml")
        variant = layout.workflow_path(f"{name}@{_sha1(texts[1])[:10]}")
        return {path: texts[0], variant: texts[1]}
    return {path: max(texts)}


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def _changed(
    listings: Listings, old: pygit2.Tree | None, new: pygit2.Tree
) -> Iterator[tuple[str, pygit2.Oid | None]]:
    """(path, blob id now or None) of each file that differs from ``old``; only the
    subtrees whose id changed are opened (`orange.store.treediff`)."""
    for path, _before, after in changes(listings, None if old is None else old.id.raw, new.id.raw):
        yield os.fsdecode(path), None if after is None else pygit2.Oid(raw=after[2])


def _data(repo: pygit2.Repository, blob: pygit2.Oid | None) -> bytes | None:
    return None if blob is None else bytes(repo[blob].read_raw())


def _read(repo: pygit2.Repository, tree: pygit2.Tree | None, path: str) -> bytes | None:
    if tree is None:
        return None
    try:
        return bytes(tree[path].read_raw())
    except KeyError:
        return None


def last_touches(
    repo: pygit2.Repository,
    tip: pygit2.Commit,
    base: pygit2.Commit | None,
    paths: list[str],
    walked: Walked | None = None,
) -> dict[str, Side]:
    """For each task file, the newest commit from ``tip`` (not reachable from ``base``)
    whose task folder differs from its first parent's, in git's topological order (the
    diff reads only the shards that changed: `changed_tasks`; a commit ``walked``
    holds is not read again)."""
    found: dict[str, Side] = {}
    left = {_task_of(path): path for path in paths}
    if not left:
        return found
    sort = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME
    walker = repo.walk(tip.id, sort)
    if base is not None:
        walker.hide(base.id)
    listed = Listings(repo, missing_ok=True)
    known = {} if walked is None else walked.tasks
    for commit in walker:
        tasks: Iterable[str] | None = known.get(commit.id.raw)
        if tasks is None:
            parent = commit.parent_ids[0].raw if commit.parent_ids else None
            tasks = changed_tasks(listed, parent_tree(repo, parent), commit.tree_id.raw)
        for task in tasks:
            if task in left:
                found[left.pop(task)] = Side(str(commit.id), commit.commit_time)
        if not left:
            break
    for path in left.values():  # not changed since the base on this side (cannot happen)
        found[path] = Side(str(tip.id), tip.commit_time)
    return found


class Walked:
    """What a walk over commits (the replay checker's) found on the way, for a merge's
    plan: the trees it listed, and which task folders each commit changed from its
    first parent (`changed_tasks`'s answer, from the same walk: `folder_tasks`)."""

    def __init__(
        self, listings: Listings, tasks: dict[bytes, tuple[str, ...]] | None = None
    ) -> None:
        self.listings = listings
        self.tasks = {} if tasks is None else tasks  # raw commit id → task ids

    def add(self, commit: pygit2.Commit, folders: list[bytes]) -> None:
        """``folders``: what `treediff.changes` collected for ``commit`` against its
        first parent."""
        if len(self.tasks) >= _WALKED:
            del self.tasks[next(iter(self.tasks))]
        self.tasks[commit.id.raw] = folder_tasks(folders)


_WALKED = 100_000  # commits remembered at most (some 15 MB)


def folder_tasks(folders: list[bytes]) -> tuple[str, ...]:
    """The task ids of the folders (``tasks/<shard>/<id>``) a walk found changed."""
    return tuple(
        folder.rpartition(b"/")[2].decode("utf-8", "replace")
        for folder in folders
        if folder.startswith(b"tasks/")
    )


def changed_tasks(listed: Listings, parent: bytes | None, tree: bytes) -> Iterator[str]:
    """The id of each ``tasks/<shard>/<id>/`` that differs between root trees ``parent``
    and ``tree`` (raw ids): only the subtrees whose id changed are opened
    (`orange.store.treediff`; a commit of Orange's changes one shard)."""
    tasks = [listed.of(root).get(b"tasks") for root in (parent, tree)]
    old, new = (None if entry is None else entry[2] for entry in tasks)
    for path, _before, _after in changes(listed, old, new, depth=2):
        yield path.rpartition(b"/")[2].decode("utf-8", "replace")


def parent_tree(repo: pygit2.Repository, parent: bytes | None) -> bytes | None:
    if parent is None:
        return None
    return repo[parent.hex()].peel(pygit2.Commit).tree_id.raw
