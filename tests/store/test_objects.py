"""Objects read with Orange's own hash check: what libgit2's object database reads, from
every place it reads them, and a swapped object refused as libgit2 refuses it."""

from __future__ import annotations

import gc
import os
import sys
import threading
import zlib
from pathlib import Path

import pygit2
import pytest

from orange.store import objects
from orange.store.objects import Reader
from orange.store.treediff import Listings, changed_files
from tests.conftest import damage, git


def _commit(repo: Path, name: str, text: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-qm", name)
    return git(repo, "rev-parse", f"HEAD:{name}").strip()


def _read(reader: Reader, hex_id: str) -> tuple[int, bytes]:
    return reader.read(bytes.fromhex(hex_id))


def test_objects_are_read_packed_loose_and_from_an_alternate(repo: Path, tmp_path: Path) -> None:
    packed = _commit(repo, "packed.txt", "in a pack\n")
    git(repo, "repack", "-adq")
    loose = _commit(repo, "loose.txt", "loose\n")
    shared = tmp_path / "shared"
    git(tmp_path, "clone", "-q", "--shared", str(repo), str(shared))
    only_there = _commit(repo, "later.txt", "in the source only\n")
    git(shared, "fetch", "-q", "origin")  # (--shared: the objects stay in the source)

    reader = Reader(pygit2.Repository(str(shared)))
    blob = pygit2.enums.ObjectType.BLOB
    assert _read(reader, packed) == (blob, b"in a pack\n")
    assert _read(reader, loose) == (blob, b"loose\n")
    assert _read(reader, only_there) == (blob, b"in the source only\n")
    head = git(shared, "rev-parse", "origin/HEAD").strip()
    kind, content = _read(reader, head)
    assert kind == pygit2.enums.ObjectType.COMMIT and content.startswith(b"tree ")


def test_a_linked_worktree_reads_the_objects_of_its_repository(repo: Path, tmp_path: Path) -> None:
    blob = _commit(repo, "a.txt", "shared\n")
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "linked"))
    reader = Reader(pygit2.Repository(str(tmp_path / "linked")))
    assert _read(reader, blob)[1] == b"shared\n"


def test_a_pack_written_after_the_reader_was_made_is_read(repo: Path) -> None:
    _commit(repo, "first.txt", "first\n")
    reader = Reader(pygit2.Repository(str(repo)))
    assert _read(reader, git(repo, "rev-parse", "HEAD:first.txt").strip())[1] == b"first\n"
    later = _commit(repo, "later.txt", "later\n")
    git(repo, "repack", "-adq")  # the loose copy is gone, the pack is new
    git(repo, "prune-packed")
    assert not (repo / ".git" / "objects" / later[:2] / later[2:]).exists()
    assert _read(reader, later)[1] == b"later\n"


def test_a_missing_object_is_a_key_error(repo: Path) -> None:
    reader = Reader(pygit2.Repository(str(repo)))
    with pytest.raises(KeyError):
        reader.read(bytes(range(20)))


def test_a_swapped_object_is_refused_as_libgit2_refuses_it(repo: Path) -> None:
    """A loose object whose content is not its name (valid zlib, other text): refused,
    by the tree walk too, never read as what it holds."""
    blob = _commit(repo, "TASK.md", "status: pending\n")
    forged = b"status: done\n"
    damage(repo, blob, zlib.compress(b"blob %d\0" % len(forged) + forged))
    reader = Reader(pygit2.Repository(str(repo)))
    with pytest.raises(pygit2.GitError, match="hash mismatch"):
        _read(reader, blob)
    plain = pygit2.Repository(str(repo))
    tree = plain.revparse_single("HEAD").peel(pygit2.Commit).tree
    with pytest.raises(pygit2.GitError, match="hash mismatch"):
        list(changed_files(plain, None, tree, Listings(plain)))


def test_a_swapped_tree_is_refused_by_the_tree_walk(repo: Path) -> None:
    _commit(repo, "a.txt", "a\n")
    (repo / "sub").mkdir()
    _commit(repo, "sub/b.txt", "b\n")
    sub = git(repo, "rev-parse", "HEAD:sub").strip()
    other = pygit2.Repository(str(repo)).revparse_single("HEAD^{tree}").read_raw()  # (another tree)
    damage(repo, sub, zlib.compress(b"tree %d\0" % len(other) + other))
    plain = pygit2.Repository(str(repo))
    tree = plain.revparse_single("HEAD").peel(pygit2.Commit).tree
    with pytest.raises(KeyError):
        list(changed_files(plain, None, tree, Listings(plain)))


def _packed_offset(repo: Path, object_id: str) -> tuple[Path, int, int]:
    """The pack holding ``object_id``, where its entry starts and its size there."""
    (index,) = (repo / ".git" / "objects" / "pack").glob("pack-*.idx")
    for line in git(repo, "verify-pack", "-v", str(index)).splitlines():
        fields = line.split()
        if fields and fields[0] == object_id:
            return index.with_suffix(".pack"), int(fields[4]), int(fields[3])
    raise AssertionError(f"{object_id} is not packed")


def test_a_good_packed_copy_does_not_hide_a_swapped_loose_one(repo: Path) -> None:
    """Held twice, an object is libgit2's to choose (it reads the loose copy): a swapped
    loose copy beside a good packed one is refused, as `task show` refuses it."""
    blob = _commit(repo, "TASK.md", "status: pending\n")
    git(repo, "repack", "-adq")
    forged = b"status: done\n"
    damage(repo, blob, zlib.compress(b"blob %d\0" % len(forged) + forged))
    plain = pygit2.Repository(str(repo))
    with pytest.raises(pygit2.GitError, match="hash mismatch"):
        plain[blob].read_raw()  # (what `task show` reads)
    with pytest.raises(pygit2.GitError, match="hash mismatch"):
        _read(Reader(plain), blob)


def test_a_damaged_packed_copy_is_refused_though_a_good_loose_one_exists(repo: Path) -> None:
    text = "status: pending\n" + "x" * 3000 + "\n"
    blob = _commit(repo, "TASK.md", text)
    git(repo, "repack", "-adq")
    pack, start, size = _packed_offset(repo, blob)
    data = bytearray(pack.read_bytes())
    for at in range(start + 8, start + size - 4):  # the entry's compressed bytes
        data[at] ^= 0x55
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    damage(repo, blob, zlib.compress(b"blob %d\0" % len(text) + text.encode()))
    plain = pygit2.Repository(str(repo))
    with pytest.raises(pygit2.GitError) as libgit2s:
        plain.odb.read(blob)
    with pytest.raises(pygit2.GitError) as ours:
        _read(Reader(plain), blob)
    assert str(ours.value) == str(libgit2s.value)


def test_an_alternates_swapped_copy_is_refused(repo: Path, tmp_path: Path) -> None:
    """A repository borrowing objects reads every object as libgit2 does: a swapped copy
    in the other repository is refused even when its own pack holds a good one."""
    text = "status: pending\n"
    _commit(repo, "TASK.md", text)
    shared = tmp_path / "shared"
    git(tmp_path, "clone", "-q", "--shared", str(repo), str(shared))
    git(shared, "repack", "-aq")  # its own pack, of every object (-a: borrowed ones too)
    blob = git(shared, "rev-parse", "HEAD:TASK.md").strip()
    assert _packed_offset(shared, blob)
    forged = b"status: done\n"
    damage(repo, blob, zlib.compress(b"blob %d\0" % len(forged) + forged))
    plain = pygit2.Repository(str(shared))
    with pytest.raises(pygit2.GitError, match="hash mismatch"):
        plain[blob].read_raw()
    with pytest.raises(pygit2.GitError, match="hash mismatch"):
        _read(Reader(plain), blob)


def _deleted_packs_open() -> list[str]:
    """Pack files this process still holds open or mapped after they were deleted."""
    held = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            held.append(os.readlink(fd))
        except OSError:
            continue
    held += Path("/proc/self/maps").read_text().splitlines()
    return [line for line in held if "/objects/pack/" in line and "(deleted)" in line]


def test_walks_let_go_of_the_packs_a_repack_deleted(repo: Path) -> None:
    """A long-running process (the monitor) walks after each repack: the packs the
    repack deleted are not held open or mapped (their disk space freed)."""
    for n in range(5):
        _commit(repo, f"f{n}.txt", f"{n}\n" * 2000)
        git(repo, "repack", "-adq")
        plain = pygit2.Repository(str(repo))
        tree = plain.revparse_single("HEAD").peel(pygit2.Commit).tree
        assert len(list(changed_files(plain, None, tree, Listings(plain)))) == n + 2
        del plain, tree
        gc.collect()
    assert _deleted_packs_open() == []


def test_threads_reading_many_repositories_list_every_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`orange run` reads from several threads: readers of more repositories than the
    process keeps backends for, made at once, never fail a read (a good tree listed as
    empty where a missing one may be)."""
    monkeypatch.setattr(objects, "_KEEP", 3)  # (fewer than the repositories: dropped often)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # (threads switch as often as they can)
    repos = []
    for n in range(8):
        repo = tmp_path / f"r{n}"
        git(tmp_path, "init", "-q", str(repo))
        _commit(repo, "a.txt", f"{n}\n")
        tree = bytes.fromhex(git(repo, "rev-parse", "HEAD^{tree}").strip())
        repos.append((pygit2.Repository(str(repo)), tree))
    listed: list[int] = []

    def read(start: int) -> None:
        for n in range(1000):
            plain, tree = repos[(start + n) % len(repos)]
            listed.append(len(Listings(plain, missing_ok=True).of(tree).entries))

    try:
        workers = [threading.Thread(target=read, args=(n,)) for n in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(interval)
    assert len(listed) == 4000
    assert set(listed) == {1}
