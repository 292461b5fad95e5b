"""Conflicts seen before anyone merges (DESIGN §10).

For every active task of a project whose branch has commits of its own, whether that
branch merges cleanly into the branch it merges into (its ``base``, else the default
branch) and with each other such branch, and if not, on which files: ``git merge-tree
--write-tree``, which merges two commits in memory and touches no checkout.

Derived local state, never in the ref: the answers are kept in ``<git common
dir>/orange/conflicts.json``, by the commit ids of the two sides, so a scan after one
branch moved asks git only about the pairs that branch is in, and a scan after nothing
moved asks it nothing (the whole scan is keyed by every tip it read).

A pair is handed to git only when it can conflict: both sides changed a path since
their merge base (to different contents), or one side added a file where the other
added a folder, or either side deleted (or renamed) something.  Two branches that only
added and modified other paths merge cleanly, whatever git would say of renames (there
are none without a deletion).

A task's branch is read where this clone has it: ``refs/heads/<branch>``, else the
project's sync remote's copy, ``refs/remotes/<remote>/<branch>`` (a teammate's task:
Orange pushes its branch there when it enters a state that waits for a person, and a
``git fetch`` of that remote brings it here).  The remote is the one ``orange sync``
uses (``branch.<default>.remote``, else ``origin``), and only if the repository has it.
Orange does not fetch for a scan: a remote copy is as fresh as this clone's last fetch
of it, and a local branch of the same name wins (it is what a merge here would take).
Such a side shows as ``<remote>/<branch>``.

Branch names come from the ref: each passes `check_branch_name` before it is read
as a reference name here; git sees only commit ids.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from typing import NamedTuple

import pygit2

from orange.engine.definitions import Definitions
from orange.errors import InvalidInput, OrangeError
from orange.projects import Project
from orange.runtime.git import GitFailed, git
from orange.store import listing
from orange.store.branches import check_branch_name
from orange.store.store import Snapshot, TaskStore
from orange.store.task import Task
from orange.store.treediff import Listings, changes

CACHE = "conflicts.json"
VERSION = 2  # a side's key names its reference (a local branch or a remote's copy)


class Clash(NamedTuple):  # not a dataclass: see `orange.engine.workflow`
    """One branch ``task`` would conflict with: another task's (``other`` its id) or
    the branch it merges into (``other`` empty), and the files."""

    other: str
    branch: str
    files: tuple[str, ...]

    def label(self) -> str:
        """``main``, or ``task ID (BRANCH)``."""
        return self.branch if not self.other else f"task {self.other} ({self.branch})"

    def text(self, most: int = 5) -> str:
        """``LABEL on FILE, FILE and N more``."""
        return f"{self.label()} on {self.file_list(most)}"

    def file_list(self, most: int = 5) -> str:
        """``FILE, FILE and N more``, control characters in a file's name written as
        escapes (the names are the branches' content; this text reaches terminals and
        agents' prompts)."""
        shown = ", ".join(_printable(name) for name in self.files[:most])
        more = len(self.files) - most
        return shown + (f" and {more} more" if more > 0 else "")

    def as_json(self) -> dict[str, object]:
        return {"task": self.other or None, "branch": self.branch, "files": list(self.files)}


def _printable(name: str) -> str:
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in name)


class _Side(NamedTuple):
    task: Task
    branch: str  # as shown: the branch, or ``<remote>/<branch>`` for a remote's copy
    ref: str  # the reference read
    base: str
    tip: str
    base_tip: str


def scan(store: TaskStore, snap: Snapshot, project: Project) -> dict[str, tuple[Clash, ...]]:
    """Each active task of ``project`` with a predicted conflict, and its clashes (the
    branch it merges into first, then the other tasks by id).  A task without commits
    of its own, without a branch here, or with a bad branch name is not in it."""
    # Nothing moved since the last scan (the tasks ref, so the tasks and their branch
    # names, and every tip it read): its answer, without reading the listing.
    at = f"{snap.commit.id if snap.commit is not None else ''} {project.default_branch}"
    cache = _Cache(store)
    if cache.at == at and cache.key is not None and _unmoved(store.repo.pygit, cache.key):
        return cache.result
    known = Definitions(snap)
    active = [
        task
        for task in listing.tasks(snap)
        if isinstance(task, Task)
        and task.project == project.name
        and known.is_active(task.workflow, task.str_field("workflow_rev"), task.status)
    ]
    return clashes(store, project, active, at=at)


def predicted(store: TaskStore, snap: Snapshot, project: Project) -> dict[str, tuple[Clash, ...]]:
    """`scan`, or nothing when git cannot answer in this clone (an object missing or
    damaged): a prediction never stops a listing, a show or the monitor."""
    try:
        return scan(store, snap, project)
    except (pygit2.GitError, KeyError, ValueError, OSError, OrangeError):
        return {}


def clashes(
    store: TaskStore, project: Project, active: Iterable[Task], *, at: str = ""
) -> dict[str, tuple[Clash, ...]]:
    """`scan` over the tasks ``active`` (the caller's list of active tasks); ``at``
    names the state of the tasks ref they were read from (kept with the answer)."""
    repo = store.repo.pygit
    sides = _sides(repo, project, active)
    key = [[s.task.id, s.ref, s.tip, f"refs/heads/{s.base}", s.base_tip] for s in sides]
    cache = _Cache(store)
    if cache.key == key:
        if cache.at != at:
            cache.save(key, cache.result, cache.pairs, at)
        return cache.result
    with_commits = [s for s in sides if s.tip != s.base_tip and not _contains(repo, s)]
    pairs = _Pairs(repo, store, cache.pairs)
    found: dict[str, list[Clash]] = {}
    for side in with_commits:
        files = pairs.files(side.base_tip, side.tip)
        if files:
            found.setdefault(side.task.id, []).append(Clash("", side.base, files))
    for index, one in enumerate(with_commits):
        for two in with_commits[index + 1 :]:
            if one.tip == two.tip:
                continue
            files = pairs.files(*sorted((one.tip, two.tip)))
            if files:
                found.setdefault(one.task.id, []).append(Clash(two.task.id, two.branch, files))
                found.setdefault(two.task.id, []).append(Clash(one.task.id, one.branch, files))
    result = {
        task_id: tuple(sorted(items, key=lambda c: (c.other != "", c.other)))
        for task_id, items in sorted(found.items())
    }
    cache.save(key, result, pairs.used, at)
    return result


def against_base(store: TaskStore, project: Project, task: Task) -> Clash | None:
    """The conflict ``task``'s branch would meet merged into its base now (None: it
    merges cleanly, has no commits of its own, or no branch here).  Reads the scan's
    answers, changes none."""
    repo = store.repo.pygit
    sides = _sides(repo, project, [task])
    if not sides or sides[0].tip == sides[0].base_tip or _contains(repo, sides[0]):
        return None
    side = sides[0]
    files = _Pairs(repo, store, _Cache(store).pairs).files(side.base_tip, side.tip)
    return Clash("", side.base, files) if files else None


def _sides(repo: pygit2.Repository, project: Project, active: Iterable[Task]) -> list[_Side]:
    sides = []
    remote = sync_remote(repo, project.default_branch)
    for task in active:
        try:
            branch = check_branch_name(task.branch)
            base = check_branch_name(task.str_field("base") or project.default_branch)
        except InvalidInput:
            continue  # a forged name: never handed to git
        shown, ref = branch, f"refs/heads/{branch}"
        tip, base_tip = _tip(repo, ref), _tip(repo, f"refs/heads/{base}")
        if not tip and remote is not None:  # a teammate's: the remote's copy, if fetched
            shown, ref = f"{remote}/{branch}", f"refs/remotes/{remote}/{branch}"
            tip = _tip(repo, ref)
        if tip and base_tip:
            sides.append(_Side(task, shown, ref, base, tip, base_tip))
    sides.sort(key=lambda s: s.task.id)
    return sides


def sync_remote(repo: pygit2.Repository, default_branch: str) -> str | None:
    """The remote ``orange sync`` uses (``branch.<default>.remote``, else ``origin``),
    from the repository's configuration; None when the repository has no such remote
    (or a name no reference can hold)."""
    try:
        values = list(repo.config.get_multivar(f"branch.{default_branch}.remote"))
        name = ((values[-1] if values else "") or "").strip() or "origin"
        if name not in repo.remotes.names():
            return None
        return check_branch_name(name)
    except (pygit2.GitError, InvalidInput, ValueError):
        return None


def _unmoved(repo: pygit2.Repository, key: list[list[str]]) -> bool:
    """Whether every branch and base tip named in a scan's key is where it was."""
    seen: dict[str, str] = {}
    for _task, ref, tip, base, base_tip in key:
        for name, was in ((ref, tip), (base, base_tip)):
            if name not in seen:
                seen[name] = _tip(repo, name)
            if seen[name] != was:
                return False
    return True


def _tip(repo: pygit2.Repository, ref_name: str) -> str:
    """The commit the reference ``ref_name`` points at ("" if there is none here)."""
    try:
        ref = repo.references.get(ref_name)
        if ref is None:
            return ""
        return str(ref.resolve().peel(pygit2.Commit).id)
    except (pygit2.GitError, KeyError, ValueError):
        return ""


def _contains(repo: pygit2.Repository, side: _Side) -> bool:
    """Whether the branch the task merges into holds all of its commits already."""
    try:
        return bool(repo.descendant_of(side.base_tip, side.tip))
    except pygit2.GitError:
        return False


class _Pairs:
    """The conflicting files of pairs of commits: the cached answer, else found now."""

    def __init__(
        self, repo: pygit2.Repository, store: TaskStore, known: Mapping[str, tuple[str, ...]]
    ):
        self.repo = repo
        self.cwd = store.repo.common_dir
        self.known = known
        self.used: dict[str, tuple[str, ...]] = {}
        self.listings = Listings(repo, missing_ok=True, keep=4096)
        self.changed: dict[tuple[str, str], dict[bytes, bytes | None]] = {}

    def files(self, one: str, two: str) -> tuple[str, ...]:
        key = f"{one}:{two}"
        found = self.known.get(key)
        if found is None:
            found = self._merge(one, two) if self._may_conflict(one, two) else ()
            found = self._named(found, one, two)
        self.used[key] = found
        return found

    def _may_conflict(self, one: str, two: str) -> bool:
        try:
            base = self.repo.merge_base(one, two)
        except pygit2.GitError:
            base = None
        if base is None:
            return False  # unrelated histories: git refuses to merge them at all
        ours, theirs = self._changed(str(base), one), self._changed(str(base), two)
        if None in ours.values() or None in theirs.values():
            return True  # a deletion, or a rename: let git judge
        if any(ours[path] != theirs[path] for path in ours.keys() & theirs.keys()):
            return True  # the same path changed two ways (the same change merges)
        return bool(_folders(ours) & theirs.keys() or _folders(theirs) & ours.keys())

    def _changed(self, base: str, tip: str) -> dict[bytes, bytes | None]:
        """Each path changed from ``base`` to ``tip``: its mode and object id now,
        None if it was deleted."""
        found = self.changed.get((base, tip))
        if found is None:
            old = self.repo[base].peel(pygit2.Commit).tree_id.raw
            new = self.repo[tip].peel(pygit2.Commit).tree_id.raw
            found = {
                path: None if after is None else after[0] + b" " + after[2]
                for path, _before, after in changes(self.listings, old, new)
            }
            self.changed[(base, tip)] = found
        return found

    def _named(self, files: tuple[str, ...], one: str, two: str) -> tuple[str, ...]:
        """Each conflicting file by the name the branches gave it: git moves a file
        aside for a folder of the same name as ``NAME~SIDE``."""
        if not any("~" in name for name in files):
            return files
        changed: set[bytes] = set()
        for key, paths in self.changed.items():
            if key[1] in (one, two):
                changed |= paths.keys()
        named = set()
        for name in files:
            stem = name.rsplit("~", 1)[0]
            moved = "~" in name and os.fsencode(name) not in changed
            named.add(stem if moved and os.fsencode(stem) in changed else name)
        return tuple(sorted(named))

    def _merge(self, one: str, two: str) -> tuple[str, ...]:
        try:
            out = git(
                "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", one, two,
                cwd=self.cwd, check=False,
            )  # fmt: skip
        except GitFailed:
            return ()
        parts = out.split("\0")
        return tuple(sorted({path for path in parts[1:] if path}))


def _folders(changed: Mapping[bytes, bytes | None]) -> set[bytes]:
    """Every folder above a changed path (where a file added on the other side would
    collide with it)."""
    folders: set[bytes] = set()
    for path in changed:
        while b"/" in path:
            path = path.rsplit(b"/", 1)[0]
            folders.add(path)
    return folders


class _Cache:
    """The last scan (its key and result) and the answers per pair, in this clone's
    private folder.  Unreadable or of another version: empty."""

    def __init__(self, store: TaskStore):
        self.path = store.repo.orange_dir() / CACHE
        self.key: list[list[str]] | None = None
        self.at = ""
        self.result: dict[str, tuple[Clash, ...]] = {}
        self.pairs: dict[str, tuple[str, ...]] = {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("version") != VERSION:
                return
            self.pairs = {k: tuple(v) for k, v in data["pairs"].items()}
            self.result = {
                task_id: tuple(Clash(c[0], c[1], tuple(c[2])) for c in items)
                for task_id, items in data["result"].items()
            }
            self.key = [[str(part) for part in side] for side in data["key"]]
            if any(len(side) != 5 for side in self.key):
                raise ValueError("a side of five")
            self.at = str(data.get("at", ""))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
            self.key, self.at, self.result, self.pairs = None, "", {}, {}

    def save(
        self,
        key: list[list[str]],
        result: Mapping[str, tuple[Clash, ...]],
        pairs: Mapping[str, tuple[str, ...]],
        at: str,
    ) -> None:
        data = {
            "version": VERSION,
            "at": at,
            "key": key,
            "result": {
                task_id: [[c.other, c.branch, list(c.files)] for c in items]
                for task_id, items in result.items()
            },
            "pairs": {k: list(v) for k, v in pairs.items()},
        }
        try:
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".conflicts-")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle)
            os.replace(tmp, self.path)
        except OSError:
            pass  # derived state: the next scan asks git again
