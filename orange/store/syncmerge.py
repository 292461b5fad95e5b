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
from collections.abc import Collection, Iterable, Iterator
from typing import NamedTuple

import pygit2

from orange.store import layout
from orange.store.taskmerge import Rules, Side, merge_task
from orange.store.tree import Content, Subtree
from orange.store.treediff import Entry, Listings, changes, is_tree, read_at

VERSION = "1"  # the ``Orange-Merge`` trailer: the version of these rules


class Plan(NamedTuple):
    writes: dict[str, Content]  # over ours: path → content or blob id (None deletes)
    incoming: tuple[str, ...]  # tasks changed on their side since the base
    outgoing: tuple[str, ...]  # tasks changed on our side since the base
    conflicts: dict[str, tuple[str, ...]]  # task id → what needed a rule
    # Besides `writes`: each task folder changed on their side only, taken whole (their
    # tree's id; None: they deleted it).  Its files are never read, here or by the
    # checker, which compares the merge's folder with theirs by tree id.
    folders: dict[str, pygit2.Oid | None]

    def tree_writes(self) -> dict[str, Content | Subtree]:
        """`writes` and each of `folders` as their tree (the merged tree, over ours)."""
        taken = {f: None if tree is None else Subtree(tree) for f, tree in self.folders.items()}
        return {**self.writes, **taken}

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
    sides = (
        changed_entries(listings, base_tree, ours.tree),
        changed_entries(listings, base_tree, theirs.tree),
    )
    # A task folder changed on one side only is that side's tree: compared by id, its
    # files never read; one changed on both sides (or a folder where a file was, or the
    # reverse) is merged file by file.
    shared = _touched(sides[0]) & _touched(sides[1])
    mine, yours = (dict(opened(listings, side, shared)) for side in sides)
    taken = {p: _id(entries[1]) for p, entries in yours.items() if _is_folder(p, entries)}
    mine_files = {p: _id(e[1]) for p, e in mine.items() if not _is_folder(p, e)}
    yours_files = {p: _id(e[1]) for p, e in yours.items() if not _is_folder(p, e)}
    both = sorted(
        p for p in mine_files.keys() & yours_files.keys() if mine_files[p] != yours_files[p]
    )
    task_paths = [p for p in both if p.startswith("tasks/")]
    touches = (
        last_touches(repo, ours, base, task_paths, walked),
        last_touches(repo, theirs, base, task_paths, walked),
    )
    # Changed on their side only: ours still holds the base's, so theirs differs from it.
    writes: dict[str, Content] = {p: yours_files[p] for p in yours_files.keys() - mine.keys()}
    merged_writes: dict[str, bytes | None] = {}
    conflicts: dict[str, tuple[str, ...]] = {}
    for path in both:
        old, one, two = (
            read_at(listings, None if base is None else base.tree_id.raw, path),
            _data(repo, mine_files[path]),
            _data(repo, yours_files[path]),
        )
        if path.startswith("tasks/"):
            merged = merge_task(old, one, two, (touches[0][path], touches[1][path]), rules, path)
            merged_writes[path] = merged.data
            if merged.conflicts:
                conflicts[_task_of(path)] = merged.conflicts
        else:
            merged_writes.update(_merge_other(path, one, two))
    ours_root = ours.tree_id.raw
    writes.update((p, d) for p, d in merged_writes.items() if read_at(listings, ours_root, p) != d)
    # A task changed on both sides came in and went out (its conflicts are flagged).
    return Plan(
        dict(sorted(writes.items())),
        _tasks(yours),
        _tasks(mine),
        conflicts,
        dict(sorted(taken.items())),
    )


def arrival(repo: pygit2.Repository, theirs: pygit2.Commit) -> Plan:
    """What comes in when there was no local ref: every task of ``theirs``."""
    return Plan({}, _tasks(changed_entries(Listings(repo), None, theirs.tree)), (), {}, {})


def _folder(path: str) -> str | None:
    """The task folder ``tasks/<shard>/<id>`` a path is, or is in (None: none)."""
    parts = path.split("/", 3)
    return "/".join(parts[:3]) if len(parts) >= 3 and parts[0] == "tasks" else None


Entries = tuple[Entry | None, Entry | None]  # a path's entry before and after (None: none)


def changed_entries(
    listings: Listings,
    old: pygit2.Tree | None,
    new: pygit2.Tree,
    folders: list[bytes] | None = None,
) -> dict[str, Entries]:
    """Each path that differs from ``old`` to ``new``: every file, except inside a task
    folder that is a tree on both sides (or on one, nothing on the other): that folder
    is one path, whole (`treediff.changes`'s ``whole``; ``folders`` as there)."""
    old_id = None if old is None else old.id.raw
    found = changes(listings, old_id, new.id.raw, folders=folders, whole=True)
    return {os.fsdecode(path): (before, after) for path, before, after in found}


def opened(
    listings: Listings, entries: dict[str, Entries], folders: Collection[str]
) -> Iterator[tuple[str, Entries]]:
    """``entries`` with each whole task folder among ``folders`` opened: its files."""
    for path, (before, after) in entries.items():
        if path not in folders or not _is_folder(path, (before, after)):
            yield path, (before, after)
            continue
        old, new = (None if e is None else e[2] for e in (before, after))
        for inner, one, two in changes(listings, old, new):
            yield f"{path}/{os.fsdecode(inner)}", (one, two)


def _is_folder(path: str, entries: Entries) -> bool:
    """Whether ``path``'s change is a task folder's, whole (`changed_entries`)."""
    return path.count("/") == 2 and path.startswith("tasks/") and any(map(is_tree, entries))


def _touched(entries: dict[str, Entries]) -> set[str]:
    """The task folders a side changed anything in (or put a file in place of)."""
    return {folder for folder in map(_folder, entries) if folder is not None}


def _tasks(entries: dict[str, Entries]) -> tuple[str, ...]:
    """The ids of the tasks changed (a whole folder's, or a changed file's)."""
    found = {
        path.rpartition("/")[2] if _is_folder(path, changed) else _task_of(path)
        for path, changed in entries.items()
        if path.startswith("tasks/")
    }
    return tuple(sorted(found))


def _id(entry: Entry | None) -> pygit2.Oid | None:
    return None if entry is None else pygit2.Oid(raw=entry[2])


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


def _data(repo: pygit2.Repository, blob: pygit2.Oid | None) -> bytes | None:
    return None if blob is None else bytes(repo[blob].read_raw())


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
    # A walker of its own: libgit2 orders commits of the same second by what a walker
    # parsed before, so one reused from another walk could change the plan.
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
