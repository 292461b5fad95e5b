"""The task store: every task is a TASK.md on ``refs/orange/tasks`` (DESIGN §2).

The only code that reads or writes ``refs/orange/*``.  Writes never touch the user's
HEAD, index or working tree: trees are built with TreeBuilder and the ref is moved by
compare-and-swap under a flock, retrying with jittered back-off when another writer
(plain git, another host's fetch) moved it first.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pygit2

from orange.errors import BrokenTaskFile, InvalidInput, NotFound, RefConflict, SchemaTooNew
from orange.store import events, layout, taskfile
from orange.store.lock import exclusive
from orange.store.packing import pack_if_due
from orange.store.repo import GitRepo, open_repo
from orange.store.task import BrokenTask, Task, unreadable
from orange.store.tree import apply_writes, read_blob, read_tree

if TYPE_CHECKING:
    import os

    import pygit2

_MAX_ATTEMPTS = 100
# Writes of objects tried again after an OSError: a ``git repack -d`` or ``git gc`` beside
# the write (Orange's own background repack, `orange.store.packing`, or the user's) runs
# ``git prune-packed``, which removes empty ``objects/xx/`` folders; libgit2 makes an
# object's folder, then renames the object into it, and fails when the folder went in
# between (git itself makes the folder again and retries).
_WRITE_RETRIES = 5
C = TypeVar("C", bound="events.Change | None")


class Snapshot:
    """A read-only view of the tasks ref at one commit (None: the ref does not exist)."""

    def __init__(self, store: TaskStore, commit: pygit2.Commit | None) -> None:
        self.store = store
        self.commit = commit
        self.tree: pygit2.Tree | None = commit.tree if commit is not None else None

    def read(self, path: str) -> bytes | None:
        blob = read_blob(self.tree, path)
        return None if blob is None else bytes(blob.data)

    def task(self, task_id: str) -> Task | None:
        """The task with exactly this id; raises BrokenTaskFile if it does not parse."""
        if not layout.valid_task_id(task_id):
            return None
        path = layout.task_path(task_id)
        try:
            blob = read_blob(self.tree, path)
        except pygit2.GitError as exc:  # its folder (or a tree above it)
            raise _unreadable(path, "its folder", exc) from None
        if blob is None:
            return None
        try:
            data = blob.data
        except pygit2.GitError as exc:
            raise _unreadable(path, "TASK.md", exc) from None
        task = Task.parse(_decode(data, path), where=path, blob_id=str(blob.id))
        if task.id != task_id:  # read or written by id only where path and id agree
            raise BrokenTaskFile(f"{path}: id {task.id!r} does not match its directory")
        return task

    def task_dirs(self) -> Iterator[tuple[str, str]]:
        """(folder, name) of every task folder, ``tasks/<shard>/<name>``, whatever it holds."""
        shards = read_tree(self.tree, "tasks")
        for shard in shards or ():
            if isinstance(shard, pygit2.Tree):
                try:
                    folders = list(shard)
                except pygit2.GitError:  # a damaged shard: its tasks are listed broken
                    continue
                for folder in folders:
                    if isinstance(folder, pygit2.Tree):
                        yield f"tasks/{shard.name}/{folder.name}", str(folder.name)

    def misplaced_reason(self, task_dir: str, blob_id: str | None = None) -> str:
        """Why the task folder ``task_dir`` holds no task of its name; its TASK.md read
        by ``blob_id`` when given ("" for none), else by path."""
        path = f"{task_dir}/TASK.md"
        try:
            if blob_id is None:
                blob = read_blob(self.tree, path)
            else:
                found = self.store.pygit.get(blob_id) if blob_id else None
                blob = found if isinstance(found, pygit2.Blob) else None
            if blob is None:
                return f"{path}: TASK.md is missing"
            task = Task.parse(_decode(blob.data, path), where=path, blob_id=str(blob.id))
        except pygit2.GitError as exc:
            return _unreadable(path, "TASK.md", exc).message
        except BrokenTaskFile as exc:
            return exc.message if exc.message.startswith(path) else f"{path}: {exc.message}"
        return f"{path}: id {task.id!r} does not match its directory"

    def schema(self) -> int:
        raw = self.read(layout.SCHEMA_PATH)
        if raw is None:
            return 0
        try:
            return int(raw.decode().strip())
        except ValueError:
            return 10**6  # unreadable: assume something newer than we know


class TaskStore:
    """Tasks of one repository."""

    def __init__(self, repo: GitRepo) -> None:
        self.repo = repo

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ".") -> TaskStore:
        return cls(open_repo(path))

    @property
    def pygit(self) -> pygit2.Repository:
        return self.repo.pygit

    # Reading -------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        return Snapshot(self, _tip(self.pygit)[1])

    def resolve(self, prefix: str, snapshot: Snapshot | None = None) -> str:
        """A full task id from an id or a unique prefix of one."""
        snap = snapshot or self.snapshot()
        prefix = prefix.strip()
        if not prefix:
            raise InvalidInput("no task id given", hint="pass a task id (see `orange task list`)")
        if layout.valid_task_id(prefix) and _has_file(snap, layout.task_path(prefix)):
            return prefix
        # A prefix: the names of the task folders, without reading a file (a single
        # task's command never loads the listing cache, `orange.store.listing`).
        matches = sorted({name for _dir, name in snap.task_dirs() if name.startswith(prefix)})
        if not matches:
            raise NotFound(f"no task {prefix!r}", hint="see `orange task list --all`")
        if len(matches) > 1:
            shown = ", ".join(matches[:5]) + (" ..." if len(matches) > 5 else "")
            raise InvalidInput(f"task id {prefix!r} is ambiguous: {shown}", hint="type more of it")
        return matches[0]

    def get(self, prefix: str) -> Task:
        snap = self.snapshot()
        task_id = self.resolve(prefix, snap)
        task = snap.task(task_id)
        if task is None:  # listed, but not where its id says: a misplaced or broken file
            for task_dir, name in snap.task_dirs():
                if name == task_id:
                    raise BrokenTaskFile(snap.misplaced_reason(task_dir))
            raise NotFound(f"no task {prefix!r}")
        return task

    def body_of(self, task: Task | BrokenTask) -> str:
        """The task's whole TASK.md text, by its blob; `BrokenTaskFile` when git cannot
        read it from this clone's objects (damaged since it was listed)."""
        if not task.blob_id or task.blob_id.startswith("missing:"):
            return ""
        try:
            raw = self.pygit[task.blob_id].read_raw()
        except pygit2.GitError as exc:
            raise _unreadable(layout.task_path(task.id), "TASK.md", exc) from None
        return _decode(raw, task.blob_id)

    # Writing -------------------------------------------------------------------------
    def _wake(self) -> None:
        """Tell a running monitor that the tasks ref moved (libgit2 runs no git hooks,
        so the ``reference-transaction`` hook never sees Orange's own writes)."""
        _touch(self.repo.orange_dir() / "wake")

    def commit(self, compute: Callable[[Snapshot], C]) -> C:
        """Apply ``compute`` to the current tip and commit its change atomically.

        ``compute`` is re-run on the new tip whenever the ref moved under us, so it must
        re-check its preconditions there.  Returns what ``compute`` returned, with
        ``commit`` set to the new commit id (left None when there is nothing to write:
        ``compute`` returned None, a change without writes, or the same tree).  Every
        200 writes or so, the writer then packs their objects (`orange.store.packing`).
        """
        change = self._commit(compute)
        if change is not None and change.commit is not None:
            pack_if_due(self.pygit, self.repo.common_dir)
        return change

    def _commit(self, compute: Callable[[Snapshot], C]) -> C:
        repo = self.pygit
        with exclusive(self.repo.orange_dir() / "tasks.lock"):
            for attempt in range(_MAX_ATTEMPTS):
                ref, commit = _tip(repo)
                snap = Snapshot(self, commit)
                schema = snap.schema()
                if schema > layout.SCHEMA_VERSION:
                    raise SchemaTooNew(
                        f"the tasks in this repository use schema {schema}; this Orange "
                        f"knows schema {layout.SCHEMA_VERSION}",
                        hint="upgrade Orange to change them",
                    )
                change = compute(snap)
                if change is None or not change.writes:
                    return change
                writes = dict(change.writes)
                if schema < layout.SCHEMA_VERSION:
                    writes[layout.SCHEMA_PATH] = f"{layout.SCHEMA_VERSION}\n".encode()
                for retry in range(_WRITE_RETRIES):
                    try:
                        tree_id = apply_writes(repo, snap.tree, writes)
                        if tree_id is None:
                            tree_id = repo.TreeBuilder().write()
                        if commit is not None and tree_id == commit.tree_id:
                            return change
                        signature = _signature(repo)
                        parents = [] if commit is None else [commit.id]
                        message = events.message(change)
                        new = repo.create_commit(
                            None, signature, signature, message, tree_id, parents
                        )
                        break
                    except OSError:  # (see _WRITE_RETRIES)
                        if retry + 1 == _WRITE_RETRIES:
                            raise
                _keep_reflog(self.repo.common_dir)
                if _move_ref(repo, ref, new, change.subject):
                    self._wake()
                    return change.with_commit(str(new))
                _clear_stale_ref_lock(self.repo.common_dir)
                time.sleep(_jitter() * min(attempt + 1, 10))
        raise RefConflict(
            f"{layout.TASKS_REF} kept moving; gave up after {_MAX_ATTEMPTS} attempts",
            hint="try again",
        )


def _jitter() -> float:
    """1 to 5 ms, from the OS's random source (``random`` is not worth its import here)."""
    return 0.001 + 0.004 * int.from_bytes(os.urandom(2), "big") / 0xFFFF


def _touch(path: Path) -> None:
    try:
        with open(path, "a"):
            pass
        os.utime(path)
    except OSError:
        pass  # waking the monitor is a courtesy; the poll catches up


def _move_ref(
    repo: pygit2.Repository, ref: pygit2.Reference | None, new: pygit2.Oid, why: str
) -> bool:
    """Compare-and-swap: move the ref only if it still points where we read it."""

    try:
        if ref is None:
            repo.create_reference_direct(layout.TASKS_REF, new, False, message=f"orange: {why}")
        else:
            ref.set_target(new, f"orange: {why}")
    except (pygit2.GitError, pygit2.AlreadyExistsError, ValueError, OSError):
        return False
    return True


def _keep_reflog(git_dir: Path) -> None:
    """Have git and libgit2 keep a reflog for the tasks ref (they append to a reflog
    that exists), so a bad rewind is one `git reflog refs/orange/tasks` away, without
    changing ``core.logAllRefUpdates`` for the user's whole repository."""
    log = git_dir / "logs" / layout.TASKS_REF
    if not log.exists():
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            log.touch()
        except OSError:
            pass  # no reflog is no reason to refuse the write


def _clear_stale_ref_lock(common_dir: Path) -> None:
    """Remove git's ``<ref>.lock`` left by a writer killed inside libgit2's ref update.

    We hold Orange's flock, so no Orange writer owns it; plain git holds such a lock for
    milliseconds, so one older than a second is stale.
    """
    lock = common_dir / f"{layout.TASKS_REF}.lock"
    try:
        if time.time() - lock.stat().st_mtime > 1:
            lock.unlink()
    except FileNotFoundError:
        pass


def _signature(repo: pygit2.Repository) -> pygit2.Signature:

    try:
        return repo.default_signature
    except (KeyError, pygit2.GitError):
        return pygit2.Signature("Orange", "orange@localhost")


def _tip(repo: pygit2.Repository) -> tuple[pygit2.Reference | None, pygit2.Commit | None]:
    """The tasks ref (the handle compare-and-swap needs) and the commit it points at."""

    ref = repo.references.get(layout.TASKS_REF)
    return ref, None if ref is None else ref.peel(pygit2.Commit)


def _has_file(snap: Snapshot, path: str) -> bool:
    """Whether ``path`` names a file in the snapshot, unread (`Snapshot.task` reads it,
    and says so when git cannot)."""
    try:
        return read_blob(snap.tree, path) is not None
    except pygit2.GitError:  # there, but a folder on the way cannot be read
        return True


def _unreadable(path: str, what: str, exc: pygit2.GitError) -> BrokenTaskFile:
    """A task git cannot read from this clone's objects (a damaged or missing object):
    one broken task, in the words of the listing (`orange.store.cache`)."""
    hint = "this clone's git objects are damaged: `git fsck` names them"
    return BrokenTaskFile(f"{path}: {unreadable(what, exc)}", hint=hint)


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BrokenTaskFile(f"{where}: not UTF-8 text ({exc.reason})") from None


def now_iso() -> str:
    """UTC with milliseconds, so "newest activity first" orders quick successive writes."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


__all__ = ["Snapshot", "TaskStore", "now_iso", "taskfile"]
