"""Keeping the repository packed under the store's own writes (DESIGN §2).

Every write leaves its objects loose: six files for a task's update (the commit, the
TASK.md blob, four trees), some 28 KiB of disk in 4 KiB blocks.  Git opens and maps
each loose object it reads, several times over when it packs them for a push (a sync of
a thousand offline updates read 6,000 files five times each: most of the sync), and
libgit2, which writes them, never runs ``git gc --auto``: left alone, 20,000 updates
made 120,000 loose files (600 MB) and the user's next ``git`` command paid a 100-second
automatic gc.  So:

- A write that finds the ref's reflog (every write appends to it) grown by `DUE_BYTES`
  since the last pack (about 200 writes) packs the loose objects of the commits written
  since, with libgit2's pack builder (about a millisecond a write; the other writes
  only look at the reflog's size), makes the pack durable (``fsync``) and removes the
  loose copies of exactly the objects it packed, as ``git prune-packed`` does: a reader
  that misses a loose object looks in the packs again (git and libgit2 both), and a
  writer that finds an object already stored (in the pack now) does not write it.
  The last pack's tip and the reflog's size then are kept in
  ``<git-common-dir>/orange/packed``; a repository without that file starts counting
  near its next multiple of `DUE_BYTES`.
- A pack every 200 writes would make a hundred packs in 20,000 (a cold listing then
  costs 1.4 times the CPU of one pack).  When a write leaves more than `ROLLUP_AT`
  packs, it starts ``git repack -d -l --geometric=2`` in the background
  (`start_rollup`): git merges the smallest packs until each is at least twice the
  size of the next smaller one, so the count stays near log2 of the objects, reusing
  the packs' deltas.  That is the incremental repack of ``git maintenance``: it keeps
  every object of the packs it merges (reachable or not) and removes only packs and
  loose files whose objects are in its new pack, so it is safe beside other writers
  and readers.  A ``git gc --prune=now`` or an ``-a -d`` repack is not: an object a
  concurrent writer has just written, not yet named by a ref, would be deleted.  It
  runs detached so no command waits for it (git's own ``gc --auto`` detaches too), one
  at a time (`ROLLUP_LOCK`, held by git until it exits).

Packing is a courtesy: any failure leaves the objects as they were.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

import pygit2

from orange.store import commitgraph, layout
from orange.store.gitproc import start_detached
from orange.store.lock import attempt
from orange.store.since import commits_since

DUE_BYTES = 32 * 1024  # reflog growth between packs (a write's line: 150 to 250 bytes)
NEAR = 1024  # bytes past a multiple of DUE_BYTES in which a write looks at the marker
MARKER = "packed"
ROLLUP_AT = 4  # packs a write may leave before a geometric repack starts
ROLLUP_LOCK = "repack.lock"

# One raw tree entry: "<mode> <name>\0<20-byte id>" (a tree's mode is "40000").  Compiled
# when a pack is first made (`re`'s cache), not by every write's import of this module.
_ENTRY = rb"(?s)[0-7]+ [^\0]*\0.{20}"
_TREE = b"40000"
_GITLINK = b"160000"  # a submodule's commit: not an object of this repository


def pack_if_due(repo: pygit2.Repository, common_dir: Path) -> int:
    """After a write: pack the loose objects of the commits since the last pack when
    the reflog grew by `DUE_BYTES` since; how many objects were packed.  A write whose
    reflog line did not end just past a multiple of `DUE_BYTES` costs one ``stat``."""
    try:
        size = (common_dir / "logs" / layout.TASKS_REF).stat().st_size
        if size % DUE_BYTES >= NEAR:
            return 0
        marker = common_dir / "orange" / MARKER
        since = _read_marker(marker)
        if since is not None and 0 <= size - since[0] < DUE_BYTES // 2:
            return 0  # packed (or started counting) near this multiple already
        tip = repo.references[layout.TASKS_REF].target
        if since is None or size < since[0] or since[1] not in repo:  # (starts now)
            _write_marker(marker, size, str(tip))
            return 0
        with attempt(marker.with_name(f"{MARKER}.lock")) as mine:
            if not mine:
                return 0  # another writer is packing them
            try:
                packed = pack_loose(repo, str(tip), since[1], common_dir / "objects")
            finally:  # (tried once: a failure leaves these objects loose, for git gc)
                _write_marker(marker, size, str(tip))
            if len(pack_names(common_dir / "objects")) > ROLLUP_AT:
                start_rollup(common_dir)
            commitgraph.start_update(repo, common_dir / "orange", str(tip))
            return packed
    except (OSError, KeyError, ValueError, pygit2.GitError):  # (and SubprocessError)
        return 0


def pack_loose(repo: pygit2.Repository, tip: str, since: str | None, objects: Path) -> int:
    """Write the loose objects of the commits from ``tip`` not reachable from
    ``since`` into one pack; how many (each commit's objects: the trees and blobs that
    differ from its parents' at the same path).  Not git's walk with ``since`` hidden:
    it trusts dates, and a teammate's commits dated before a base both sides share took
    it past that base, reading the trees of every commit below (`commits_since`)."""
    listings = _Listings(repo)
    builder = pygit2.PackBuilder(repo)
    added: list[str] = []
    for commit in commits_since(repo, tip, since):
        parents = [repo[p].peel(pygit2.Commit).tree_id.raw for p in commit.parent_ids]
        for raw in (commit.id.raw, *listings.new_objects(parents, commit.tree_id.raw)):
            name = raw.hex()
            if os.path.exists(objects / name[:2] / name[2:]):  # fetched ones are packed
                builder.add(pygit2.Oid(raw=raw))
                added.append(name)
    if not added:
        return 0
    before = pack_names(objects)
    builder.set_threads(1)  # small objects: threads wait on each other more than work
    builder.write(objects / "pack")
    _make_durable(objects / "pack", pack_names(objects) - before)
    _drop_loose(objects, added)
    return builder.written_objects_count


def pack_names(objects: Path) -> set[str]:
    """The names (``pack-<id>``) of the packs in an objects folder that have an index."""
    try:
        return {name[:-4] for name in os.listdir(objects / "pack") if name.endswith(".idx")}
    except OSError:
        return set()


def _make_durable(folder: Path, names: Iterable[str]) -> None:
    """``fsync`` the new packs and their folder: the loose copies go next, and a crash
    must not leave an object in neither."""
    for name in names:
        for suffix in (".pack", ".idx"):
            fd = os.open(folder / f"{name}{suffix}", os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _drop_loose(objects: Path, names: Iterable[str]) -> None:
    """Remove the loose copies of objects now in a pack (their folders stay: a writer
    may be creating a file in one)."""
    for name in names:
        try:
            os.unlink(objects / name[:2] / name[2:])
        except FileNotFoundError:  # a concurrent repack removed it already
            pass


def start_rollup(common_dir: Path) -> bool:
    """Start ``git repack -d -l --geometric=2`` detached, unless one is running (why
    this repack and no other: the module's docstring); whether it started.  git holds
    the lock until it exits: `rollup_running` tells, and waiting for the lock waits
    for it."""
    repack = (
        "git", f"--git-dir={common_dir}", "-c", "pack.threads=1",
        "repack", "-d", "-l", "-q", "--geometric=2", "--no-write-bitmap-index",
    )  # fmt: skip
    return start_detached(common_dir / "orange" / ROLLUP_LOCK, 'exec "$@"', repack)


def rollup_running(common_dir: Path) -> bool:
    """Whether a repack `start_rollup` started is still running."""
    with attempt(common_dir / "orange" / ROLLUP_LOCK) as mine:
        return not mine


def _read_marker(path: Path) -> tuple[int, str] | None:
    """(reflog size, tip) at the last pack; None when absent or not that."""
    try:
        size, tip = path.read_text().split()
        if re.fullmatch("[0-9a-f]{40}|[0-9a-f]{64}", tip):
            return int(size), tip
    except (OSError, ValueError):
        pass
    return None


def _write_marker(path: Path, size: int, tip: str) -> None:
    tmp = path.with_name(f"{MARKER}.tmp")
    tmp.write_text(f"{size} {tip}\n")
    os.replace(tmp, path)


class _Listings:
    """The raw entries of trees, as sets by raw tree id, each tree read once: what
    changed between two trees is a set difference, so most of a ``tasks`` tree is
    never looked at one entry at a time."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.odb = repo.odb
        self.raw: dict[bytes, frozenset[bytes]] = {}

    def entries(self, tree: bytes) -> frozenset[bytes]:
        found = self.raw.get(tree)
        if found is None:
            if len(self.raw) > 4096:
                self.raw.clear()
            _kind, data = self.odb.read(tree.hex())
            found = self.raw[tree] = frozenset(re.findall(_ENTRY, data))
        return found

    def new_objects(self, olds: list[bytes], new: bytes) -> list[bytes]:
        """``new`` and what it holds that none of ``olds`` (the trees at the same path
        in the parents) holds at the same path."""
        if new in olds:
            return []
        found = [new]
        now = self.entries(new)
        fresh = now.difference(*(self.entries(old) for old in olds))
        if not fresh:
            return found
        # An old tree's entry of the name of a fresh one differs from it: gone from new.
        gone = [dict(map(_tree_entry, self.entries(old) - now)) for old in olds]
        for entry in fresh:
            mode, _, rest = entry.partition(b" ")
            name, oid = rest[:-21], rest[-20:]
            if mode == _TREE:
                subs = [sub for sub in (names.get(name) for names in gone) if sub]
                found += self.new_objects(subs, oid)
            elif mode != _GITLINK:
                found.append(oid)
        return found


def _tree_entry(entry: bytes) -> tuple[bytes, bytes]:
    """(name, id) of a raw entry that is a tree; (b"", b"") for any other."""
    mode, _, rest = entry.partition(b" ")
    return (rest[:-21], rest[-20:]) if mode == _TREE else (b"", b"")
