"""What changed between two trees, opening only the subtrees whose id changed.

The tasks ref is sharded (DESIGN §2), so a commit of Orange's changes one shard: a walk
that compares tree ids level by level reads the root, ``tasks/`` and that shard, what
the commit changed, where a diff of the two whole root trees (``diff_to_tree``) costs
what the repository holds (47 ms a commit at 50,000 tasks against 0.4 ms for this walk).
The one walk serves the sync merge (`orange.store.syncmerge`: which tasks a commit
changed), the replay checker (`orange.engine.replay`: every changed file) and the git
hooks; one task's history is git's own path-limited walk (`orange.store.history`).

Trees are read from their raw objects (`orange.store.objects`: each checked against its
name, as libgit2 checks it, for less) and kept in `Listings`, by tree id (a walk over
consecutive commits reads the parent's trees just before, and reuses them) and by path
(a shard's tree as the last commit that changed it left it).  Two trees whose bytes
differ only inside entry ids (all ``tasks/`` trees of a history, a shard's trees as its
tasks change) are compared as bytes, without parsing the second (`Listing.changed`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from itertools import accumulate
from operator import itemgetter

import pygit2

from orange.store.objects import Reader

Entry = tuple[bytes, bytes, bytes]  # one tree entry: (octal mode, name, raw object id)
Change = tuple[bytes, Entry | None, Entry | None]  # (path, before or None, after or None)

_TYPE = 0o170000  # the object-type bits of a mode (git's S_IFMT)
_TREE = 0o040000
# One raw tree entry: "<mode> <name>\0<20-byte id>".
_ENTRY = re.compile(rb"([0-7]++) ([^\0]*+)\0(.{20})", re.S)


def is_tree(entry: Entry | None) -> bool:
    return entry is not None and _kind(entry) == _TREE


def _folder_or_none(entry: Entry | None) -> bool:
    return entry is None or _kind(entry) == _TREE


def _kind(entry: Entry) -> int:
    return int(entry[0], 8) & _TYPE


class Listing:
    """One tree's entries (raw name → entry), parsed from its raw object when first asked.

    Two trees that differ only in some entries' ids (a commit of Orange's changes one id
    in ``tasks/`` and one in a shard) share one `_Layout`: what changed between them is
    found by comparing their raw bytes, and the second is never parsed entry by entry."""

    __slots__ = ("_entries", "_layout", "_odd", "key", "raw")

    def __init__(self, key: bytes, raw: bytes) -> None:
        self.key = key
        self.raw = raw
        self._entries: dict[bytes, Entry] | None = None
        self._layout: _Layout | None = None
        self._odd = not raw  # no layout (`layout`)

    @property
    def entries(self) -> dict[bytes, Entry]:
        if self._entries is None:
            layout = self._layout
            if layout is None:
                found = _ENTRY.findall(self.raw)
                self._entries = dict(zip(map(itemgetter(1), found), found, strict=True))
            else:
                self._entries = {name: self.entry(i) for i, name in enumerate(layout.names)}
        return self._entries

    def get(self, name: bytes) -> Entry | None:
        if self._entries is None and self._layout is not None:
            index = self._layout.index.get(name)
            return None if index is None else self.entry(index)
        return self.entries.get(name)

    def entry(self, index: int) -> Entry:
        """Entry ``index`` of a tree with a layout."""
        layout = self._layout
        assert layout is not None
        end = layout.starts[index + 1]
        return layout.modes[index], layout.names[index], self.raw[end - 20 : end]

    def layout(self) -> _Layout | None:
        """Where each entry is, when the raw tree is nothing but its entries, each name
        once (None otherwise: such a tree is only ever compared entry by entry)."""
        if self._layout is None and not self._odd:
            entries = list(self.entries.values())
            ends = [0, *accumulate(len(mode) + len(name) + 22 for mode, name, _ in entries)]
            if ends[-1] == len(self.raw):  # (a name listed twice is one entry short)
                names = [name for _, name, _ in entries]
                modes = [mode for mode, _, _ in entries]
                self._layout = _Layout(ends, names, modes)
            self._odd = self._layout is None
        return self._layout

    def changed(self, new: Listing) -> list[bytes]:
        """The names whose entries differ between this tree and ``new``."""
        if len(new.raw) == len(self.raw) >= _COMPARED:
            layout = self._layout or new._layout or self.layout() or new.layout()
            found = None if layout is None else _changed_ids(layout, self.raw, new.raw)
            if found is not None and layout is not None:
                self._layout, new._layout = self._layout or layout, new._layout or layout
                return [layout.names[index] for index in found]
        return list({name for name, _ in self.entries.items() ^ new.entries.items()})


class _Layout:
    """Where each entry of a raw tree starts (the last start: its length), its names and
    modes, shared by the trees whose bytes differ only inside entry ids."""

    __slots__ = ("_index", "modes", "names", "starts")

    def __init__(self, starts: list[int], names: list[bytes], modes: list[bytes]) -> None:
        self.starts = starts
        self.names = names
        self.modes = modes
        self._index: dict[bytes, int] | None = None

    @property
    def index(self) -> dict[bytes, int]:
        if self._index is None:
            self._index = {name: index for index, name in enumerate(self.names)}
        return self._index


def _changed_ids(layout: _Layout, old: bytes, new: bytes) -> list[int] | None:
    """The entries of two raw trees of the same length and ``layout`` (``old``'s) that
    differ, in order, found by halving the byte ranges that differ; None when a mode or
    a name differs (``new`` does not have that layout)."""
    starts = layout.starts
    found: list[int] = []
    ranges = [(0, len(starts) - 1)]
    while ranges:
        low, high = ranges.pop()
        start, end = starts[low], starts[high]
        if old[start:end] == new[start:end]:
            continue
        if high - low > 1:
            middle = (low + high) // 2
            ranges += ((middle, high), (low, middle))  # the lower half is looked at first
        elif old[start : end - 20] != new[start : end - 20]:
            return None
        else:
            found.append(low)
    return found


_EMPTY = Listing(b"", b"")
_EMPTY._entries = {}


class Listings:
    """Tree listings by raw tree id, read from the raw objects: the last ``keep`` read,
    and the last two asked for at each path (a walk over consecutive commits compares
    each path with what it was the commit before, which may be long ago for a shard).

    ``missing_ok``: a missing or damaged tree (a shallow or broken clone) lists nothing
    instead of raising ``KeyError``."""

    def __init__(
        self,
        repo: pygit2.Repository,
        *,
        missing_ok: bool = False,
        keep: int = 64,
        small: int = 0,
    ) -> None:
        self.repo = repo
        self._reader: Reader | None = None
        self.missing_ok = missing_ok
        self.keep = keep
        self.cache: dict[bytes, Listing] = {}
        # Besides: up to ``small`` trees of under `_KEEP_AT` bytes (task folders), read
        # again by a merge's check, which diffs three trees of the same tasks.
        self.small = small
        self.smalls: dict[bytes, Listing] = {}
        self.at: dict[bytes, tuple[Listing, Listing]] = {}  # path → the last two
        self.held = 0  # bytes of the trees kept by path

    @property
    def reader(self) -> Reader:
        """The repository's objects, read with their names checked (made when first
        read: some walks read nothing, and a reader costs some 15 µs)."""
        if self._reader is None:
            self._reader = Reader(self.repo)
        return self._reader

    def of(self, key: bytes | None) -> Listing:
        """The listing of tree ``key`` (empty for None or an object that is no tree)."""
        if key is None:
            return _EMPTY
        found = self.cache.get(key) or self.smalls.get(key)
        if found is None:
            try:
                kind, raw = self.reader.read(key)
            except (KeyError, pygit2.GitError):
                if not self.missing_ok:
                    raise KeyError(key.hex()) from None
                return _EMPTY
            found = _EMPTY if kind != pygit2.enums.ObjectType.TREE else Listing(key, raw)
            kept = self.smalls if self.small and len(raw) < _KEEP_AT else self.cache
            if len(kept) >= (self.keep if kept is self.cache else self.small):
                del kept[next(iter(kept))]  # the oldest: a parent's, read last, stays
            kept[key] = found
        return found

    def at_path(self, key: bytes | None, path: bytes) -> Listing:
        """`of`, first looking among the last two listings asked for at ``path``."""
        if key is None:
            return _EMPTY
        last = self.at.get(path)
        if last is not None and key == last[0].key:
            return last[0]
        found = last[1] if last is not None and key == last[1].key else self.of(key)
        if len(found.raw) >= _KEEP_AT or last is not None:
            if last is None:
                while self.held > _HOLD and self.at:
                    for listing in self.at.pop(next(iter(self.at))):
                        self.held -= len(listing.raw)
            else:
                self.held -= len(last[1].raw)
            self.at[path] = (found, last[0] if last is not None else _EMPTY)
            self.held += len(found.raw)
        return found


# A tree worth keeping by its path (some 15 entries and up: the shards), and the bytes
# of them kept at most (two of each of the tasks ref's 256 shards at 50,000 tasks: 3 MiB).
_KEEP_AT = 512
_COMPARED = 256  # bytes of a tree compared as bytes with another (smaller: just parsed)
_FOLDERS = 3  # the level of `changes`'s ``folders`` (the root's own entries: level 1)
_HOLD = 8 * 2**20


def changes(
    listings: Listings,
    old: bytes | None,
    new: bytes | None,
    *,
    depth: int | None = None,
    folders: list[bytes] | None = None,
    whole: bool = False,
) -> Iterator[Change]:
    """Each entry that differs between trees ``old`` and ``new`` (raw ids; None: empty).

    Without ``depth``: each changed file (any entry that is not a tree: blobs, links,
    gitlinks), as ``git diff-tree -r`` and libgit2's tree diff report them — in the
    order of their full paths, a change of object type (a blob where a tree or a link
    was) split into the deletion and the addition.  With ``depth``: the entries that
    many levels down (1: the tree's own), whole, as changed when their mode or id did;
    anything above them that is no tree counts as an empty tree.

    ``folders``: the path of each entry three levels down that differs is added to it
    (``tasks/<shard>/<id>``: which tasks a commit changed, `orange.store.syncmerge`'s
    `changed_tasks`, found by the same walk).

    ``whole``: a task folder that is a tree on both sides (or on one, the other having
    nothing there) is reported as one change of that tree, never opened (a merge's plan
    compares such folders by tree id, `orange.store.syncmerge`)."""
    yield from _walk(listings, listings.of(old), listings.of(new), b"", 1, depth, folders, whole)


def _walk(
    listings: Listings,
    old: Listing,
    new: Listing,
    prefix: bytes,
    level: int,
    depth: int | None,
    folders: list[bytes] | None = None,
    whole: bool = False,
) -> Iterator[Change]:
    if old is new:
        return
    folder_level = whole and level == _FOLDERS and prefix.startswith(b"tasks/")
    # (sort key, name, before, after, recurse): a tree sorts as "name/", as in git.
    items: list[tuple[bytes, bytes, Entry | None, Entry | None, bool]] = []
    changed = old.changed(new)
    if level == _FOLDERS and folders is not None:
        folders += (prefix + name for name in changed)
    for name in changed:
        before, after = old.get(name), new.get(name)
        if depth is not None:
            if level == depth:
                items.append((name, name, before, after, False))
            elif is_tree(before) or is_tree(after):
                keep = (before if is_tree(before) else None, after if is_tree(after) else None)
                items.append((name + b"/", name, *keep, True))
            continue
        if folder_level and _folder_or_none(before) and _folder_or_none(after):
            items.append((name + b"/", name, before, after, False))  # the folder, whole
        elif is_tree(before) and is_tree(after):
            items.append((name + b"/", name, before, after, True))
        elif is_tree(before):
            items.append((name + b"/", name, before, None, True))
            if after is not None:
                items.append((name, name, None, after, False))
        elif is_tree(after):
            if before is not None:
                items.append((name, name, before, None, False))
            items.append((name + b"/", name, None, after, True))
        elif before is None or after is None or _kind(before) == _kind(after):
            items.append((name, name, before, after, False))
        else:  # a blob where a link or a gitlink was: deleted, then added
            items.append((name, name, before, None, False))
            items.append((name, name, None, after, False))
    items.sort(key=lambda item: item[0])  # stable: a deletion stays before its addition
    for _key, name, before, after, recurse in items:
        path = prefix + name
        if recurse:
            below_old = listings.at_path(None if before is None else before[2], path)
            below_new = listings.at_path(None if after is None else after[2], path)
            below = path + b"/"
            yield from _walk(
                listings, below_old, below_new, below, level + 1, depth, folders, whole
            )
        else:
            yield path, before, after


def changed_files(
    repo: pygit2.Repository,
    old: pygit2.Tree | None,
    new: pygit2.Tree,
    listings: Listings | None = None,
    folders: list[bytes] | None = None,
) -> Iterator[tuple[str, bytes | None, bytes | None]]:
    """Each changed file: (path, content before or None, content after or None);
    ``folders`` as `changes`."""
    listings = listings or Listings(repo)
    for path, before, after in changes(listings, _raw(old), new.id.raw, folders=folders):
        yield (
            os.fsdecode(path),
            None if before is None else _content(listings.reader, before[2]),
            None if after is None else _content(listings.reader, after[2]),
        )


def changed_blobs(
    repo: pygit2.Repository,
    old: pygit2.Tree | None,
    new: pygit2.Tree,
    listings: Listings | None = None,
    folders: list[bytes] | None = None,
) -> dict[str, str | None]:
    """Each changed file: path → its object id now (None: deleted); no content is read;
    ``folders`` as `changes`."""
    listings = listings or Listings(repo)
    return {
        os.fsdecode(path): None if after is None else after[2].hex()
        for path, _, after in changes(listings, _raw(old), new.id.raw, folders=folders)
    }


def entry_at(listings: Listings, root: bytes | None, path: str) -> Entry | None:
    """The entry at ``path`` in root tree ``root`` (a raw id; None: nothing there, or a
    file above it), read through ``listings``: a path lookup of pygit2's reads every
    tree on the way again, ``tasks/`` (7 KiB) too, each time."""
    entry: Entry | None = None if root is None else (b"40000", b"", root)
    for name in os.fsencode(path).split(b"/"):
        if not is_tree(entry):
            return None
        assert entry is not None
        entry = listings.of(entry[2]).get(name)
    return entry


def read_at(listings: Listings, root: bytes | None, path: str) -> bytes | None:
    """The content of the object at ``path`` in root tree ``root`` (None: nothing)."""
    entry = entry_at(listings, root, path)
    try:
        return None if entry is None else _content(listings.reader, entry[2])
    except KeyError:  # (a gitlink: its commit is not in this repository)
        return None


def _raw(tree: pygit2.Tree | None) -> bytes | None:
    return None if tree is None else tree.id.raw


def _content(reader: Reader, raw: bytes) -> bytes:
    """The object's raw content, read without making a pygit2 object of it."""
    try:
        return reader.read(raw)[1]
    except KeyError:  # (pygit2's NotFoundError, as `repo[...]` raises it)
        raise KeyError(raw.hex()) from None
