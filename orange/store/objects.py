"""Raw objects read with their names checked by Orange, at about half libgit2's cost.

libgit2 checks that every object it reads hashes to its name (its strict hash
verification stays on: a swapped object must never be shown, `orange.store.cache`'s
``_bulk``), with a SHA-1 that also detects collision attacks: over a fifth of the
instructions of catching up after a large sync went to it.  A `Reader` reads an object
a repository holds either packed or loose, not both, through libgit2's pack or
loose backend itself, which leaves that check to the database above it, and hashes what
it read with hashlib's SHA-1 (about 800 MB/s here, against some 180 MB/s): a swapped
object is refused all the same.  Collision detection is left to where a teammate's
objects arrive (git's ``index-pack`` and ``unpack-objects``, which git builds with it
by default) and to the rest of Orange's reads, which go through libgit2.

Anything else goes to the repository's object database, which chooses a copy and checks
it as it always has: an object held both packed and loose (which copy counts is
libgit2's choice), one a backend cannot read (damaged, or in a pack written since the reader was
made), one that does not hash to its name, and every object of a repository that
borrows objects from another (``objects/info/alternates``).
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pygit2

# libgit2's object types (git_object_t) and the names git hashes them under.
_TYPES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
# libgit2's priorities for the two backends, as its own database has them.
_PACKED, _LOOSE = 2, 1


class Reader:
    """Raw objects of one repository, by raw id: ``read(raw) -> (type, content)``,
    the type as libgit2 numbers it (``pygit2.enums.ObjectType``'s values)."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self._backends = _backends(os.path.normpath(os.path.join(_common(repo.path), "objects")))

    def read(self, raw: bytes) -> tuple[int, bytes]:
        """The object's type and content; ``KeyError`` (or libgit2's error) as the
        repository's object database raises them for a missing or damaged object."""
        oid = pygit2.Oid(raw=raw)
        found = self._only_copy(oid)
        if found is not None:
            kind, content = found
            name = _TYPES.get(kind)
            if name is not None:
                check = hashlib.sha1(b"%s %d\0" % (name, len(content)))
                check.update(content)
                if check.digest() == raw:
                    return kind, content
        kind, content = self.repo.odb.read(oid)
        return int(kind), content

    def _only_copy(self, oid: pygit2.Oid) -> tuple[int, bytes] | None:
        """The object as its packs or its loose file hold it, when only one of them
        does and it can be read (None otherwise, for the repository's database)."""
        if self._backends is None:
            return None
        pack, loose, _ = self._backends
        try:
            packed: tuple[int, bytes] | None = pack.read(oid)
        except KeyError:  # (not in the packs: pygit2's NotFoundError)
            packed = None
        except pygit2.GitError:
            return None
        try:
            if packed is None:
                return loose.read(oid)
            return None if loose.exists(oid) else packed
        except (KeyError, pygit2.GitError):
            return None


# The backends of an objects directory: (pack, loose, the database that holds them).
_Backends = tuple[pygit2.OdbBackend, pygit2.OdbBackend, pygit2.Odb]
# By objects directory, with what they were made for (the pack directory's modification
# time, whether alternates were named): shared by the readers of a process (threads too:
# `orange run`), as pygit2 never frees what a database holds of a backend (some 160
# bytes a pair; the monitor makes readers for days).  Made again only when packs change
# or the directory was dropped to keep ``_KEEP`` (more projects than a monitor has).
_MADE: dict[str, tuple[tuple[int, bool], _Backends | None]] = {}
_MAKING = threading.Lock()
_KEEP = 64


def _backends(objects: str) -> _Backends | None:
    """The pack and loose backends of ``objects`` (None: it borrows objects from
    another repository), made again when its packs changed: a pack written since is
    then read, and one deleted since let go of."""
    alternates = os.path.exists(os.path.join(objects, "info", "alternates"))
    try:
        packs = os.stat(os.path.join(objects, "pack")).st_mtime_ns
    except OSError:
        packs = 0
    made = _MADE.get(objects)
    if made is not None and made[0] == (packs, alternates):
        return made[1]
    with _MAKING:
        return _make(objects, (packs, alternates))


def _make(objects: str, state: tuple[int, bool]) -> _Backends | None:
    """`_backends`, made and kept (under `_MAKING`)."""
    made = _MADE.get(objects)
    if made is not None and made[0] == state:  # (another thread made them meanwhile)
        return made[1]
    found: _Backends | None = None
    alternates = state[1]
    if not alternates:
        pack = pygit2.OdbBackendPack(objects)
        loose = pygit2.OdbBackendLoose(objects, 0, False)
        # Held by a database of their own, which frees their libgit2 parts (and lets go
        # of the packs they opened) with it: pygit2 frees no backend that is in none.
        own = pygit2.Odb()
        own.add_backend(pack, _PACKED)
        own.add_backend(loose, _LOOSE)
        found = (pack, loose, own)
    if objects not in _MADE and len(_MADE) >= _KEEP:
        del _MADE[next(iter(_MADE))]
    _MADE[objects] = (state, found)
    return found


def common_dir(git_dir: Path) -> Path:
    """The common git dir of the repository at ``git_dir``, which holds its objects (a
    linked worktree's, such as a tasks checkout, names it in its ``commondir`` file)."""
    return Path(_common(str(git_dir))).resolve()


def _common(git_dir: str) -> str:
    """`common_dir`, not resolved (a tenth of the time: a `Reader` is made per walk)."""
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as file:
            return os.path.join(git_dir, file.read().strip())
    except OSError:
        return git_dir
