"""Packing the store's own objects as they pile up (DESIGN §2).

Every write leaves its objects loose: six files for a task's update (the commit, the
TASK.md blob, four trees).  Git opens and maps each loose object it reads, several
times over when it packs them for a push (a sync of a thousand offline updates read
6,000 files five times each: most of the sync), and libgit2, which writes them, never
runs ``git gc --auto``.  So a write that finds the ref's reflog (every write appends to
it) grown by `DUE_BYTES` since the last pack (about 200 writes) packs the loose
objects of the commits written since, with libgit2's pack builder (about a
millisecond a write; the other writes only look at the reflog's size).  Git and
libgit2 then read them from the pack, and a push reuses its deltas.  The loose copies
stay until ``git gc`` prunes them (a reader may be opening one).  The last pack's tip
and the reflog's size then are kept in ``<git-common-dir>/orange/packed``; a
repository without that file starts counting near its next multiple of `DUE_BYTES`.
Packing is a courtesy: any failure leaves the objects loose.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pygit2

from orange.store import layout
from orange.store.lock import attempt

DUE_BYTES = 32 * 1024  # reflog growth between packs (a write's line: 150 to 250 bytes)
NEAR = 1024  # bytes past a multiple of DUE_BYTES in which a write looks at the marker
MARKER = "packed"

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
                return pack_loose(repo, str(tip), since[1], common_dir / "objects")
            finally:  # (tried once: a failure leaves these objects loose, for git gc)
                _write_marker(marker, size, str(tip))
    except (OSError, KeyError, ValueError, pygit2.GitError):
        return 0


def pack_loose(repo: pygit2.Repository, tip: str, since: str | None, objects: Path) -> int:
    """Write the loose objects of the commits from ``tip`` not reachable from
    ``since`` into one pack; how many (each commit's objects: the trees and blobs that
    differ from its parents' at the same path)."""
    walker = repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL)
    if since is not None:
        walker.hide(since)
    listings = _Listings(repo)
    builder = pygit2.PackBuilder(repo)
    for commit in walker:
        parents = [repo[p].peel(pygit2.Commit).tree_id.raw for p in commit.parent_ids]
        for raw in (commit.id.raw, *listings.new_objects(parents, commit.tree_id.raw)):
            name = raw.hex()
            if os.path.exists(objects / name[:2] / name[2:]):  # fetched ones are packed
                builder.add(pygit2.Oid(raw=raw))
    if len(builder) == 0:
        return 0
    builder.set_threads(1)  # small objects: threads wait on each other more than work
    builder.write(objects / "pack")
    return builder.written_objects_count


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
