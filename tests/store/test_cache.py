from __future__ import annotations

import json
import os
import sqlite3
import time
import zlib
from contextlib import closing
from pathlib import Path

import pygit2
import pytest

from orange.errors import BrokenTaskFile, NotFound
from orange.store import cache, cachefile, layout, listing
from orange.store.events import Change
from orange.store.listing import all_tasks, entries
from orange.store.store import Snapshot, TaskStore
from orange.store.task import BrokenTask, Task
from tests.conftest import copy_task_folder, damage, git
from tests.store.helpers import put_task, set_field


def _no_cache(repo: Path) -> tuple[Path, Path]:
    """Remove every cache file of ``repo``; its Orange folder and the cache's path."""
    orange_dir = repo / ".git" / "orange"
    for path in orange_dir.glob("cache*"):
        path.unlink()
    return orange_dir, cache.cache_path(orange_dir)


def _summaries(store: TaskStore) -> dict[str, str]:
    return {t.id: t.summary for t in all_tasks(store) if isinstance(t, Task)}


def test_listing_follows_update_ref_by_plain_git(repo: Path) -> None:
    store = TaskStore.open(repo)
    put_task(store, "aaa111", summary="first")
    old = git(repo, "rev-parse", layout.TASKS_REF).strip()
    set_field(store, "aaa111", "summary", "second")
    put_task(store, "bbb222", summary="other")
    assert _summaries(store) == {"aaa111": "second", "bbb222": "other"}
    git(repo, "update-ref", layout.TASKS_REF, old)
    assert _summaries(store) == {"aaa111": "first"}


def test_listing_follows_fetch(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    put_task(TaskStore.open(clone), "ccc333", summary="from clone")
    mine = TaskStore.open(repo)
    put_task(mine, "ddd444", summary="mine")
    assert set(_summaries(mine)) == {"ddd444"}
    git(repo, "fetch", "-q", str(clone), f"+{layout.TASKS_REF}:{layout.TASKS_REF}")
    assert _summaries(mine) == {"ccc333": "from clone"}


def test_corrupt_or_missing_cache_is_rebuilt_silently(repo: Path) -> None:
    store = TaskStore.open(repo)
    for n in range(5):
        put_task(store, f"task{n:02d}", summary=f"s{n}")
    expected = _summaries(store)
    db = cache.cache_path(repo / ".git" / "orange")
    assert db.exists()
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    assert _summaries(store) == expected
    db.unlink()
    assert _summaries(store) == expected


def _parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the task files the listing parses from now on."""
    parsed: list[str] = []
    original = listing._parse_for_cache

    def counting(data: bytes, path: str) -> tuple[object, object, object]:
        parsed.append(path)
        return original(data, path)

    monkeypatch.setattr(listing, "_parse_for_cache", counting)
    return parsed


def test_cache_is_incremental_by_shard(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = TaskStore.open(repo)
    for n in range(40):
        put_task(store, f"t{n:03d}")
    all_tasks(store)
    parsed = _parses(monkeypatch)
    set_field(store, "t007", "summary", "changed")
    assert _summaries(store)["t007"] == "changed"
    assert parsed == [layout.task_path("t007")]


def test_a_task_beside_a_changed_one_in_its_shard_is_not_parsed_again(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TaskStore.open(repo)
    first = "s0000"
    beside = next(
        f"s{n:04d}" for n in range(1, 5000) if layout.shard(f"s{n:04d}") == layout.shard(first)
    )
    put_task(store, first, summary="one")
    put_task(store, beside, summary="two")
    all_tasks(store)
    parsed = _parses(monkeypatch)
    set_field(store, first, "summary", "changed")
    assert _summaries(store) == {first: "changed", beside: "two"}
    assert parsed == [layout.task_path(first)]


def test_folders_whose_names_are_not_utf8_are_broken_tasks(repo: Path) -> None:
    """Git takes any bytes but NUL and "/" in a name: a teammate's ref may hold a task
    folder or a shard whose name is not UTF-8 text.  Each is one broken task, shown with
    its bytes escaped; the listing goes on (it used to stop every listing)."""
    store = TaskStore.open(repo)
    put_task(store, "good01", summary="fine")
    shard = layout.shard("good01")
    places = [(shard.encode(), b"go\xffod"), (shard.encode(), b"go\\xffod")]
    places += [(b"\xfe\xfd", b"good01"), (b"\\xfe\\xfd", b"other1")]
    copy_task_folder(repo, "good01", places)
    for path in (repo / ".git" / "orange").glob("cache*.sqlite3*"):
        path.unlink()
    cold = entries(store.snapshot())
    assert cold == entries(store.snapshot())  # the warm listing gives the same
    by_dir = {entry.task_dir: entry for entry in cold}
    good = layout.task_dir("good01")
    assert by_dir[good].error is None and by_dir[good].task_id == "good01"
    odd = {d: e.error for d, e in by_dir.items() if d != good}
    # A name that is not UTF-8 and a name that is its escape make one row, the first in
    # git's order: the folder in the task's shard, the shard whose name is the escape.
    assert set(odd) == {f"tasks/{shard}/go\\xffod", "tasks/\\xfe\\xfd/other1"}
    for task_dir, error in odd.items():
        assert error == f"{task_dir}/TASK.md: id 'good01' does not match its directory"


def test_a_cold_cache_lists_missing_and_broken_task_files(repo: Path) -> None:
    store = TaskStore.open(repo)
    put_task(store, "good01", summary="fine")
    writes: dict[str, bytes | None] = {
        f"{layout.task_dir('nofile')}/notes.txt": b"no TASK.md here\n",
        layout.task_path("broken"): b"---\nid: [unclosed\n---\n",
        layout.task_path("broken2"): b"---\nid: [unclosed\n---\n",  # the same blob
    }

    def compute(snap: Snapshot) -> Change:
        return Change(task_id="nofile", event="test", subject="odd files", writes=writes)

    store.commit(compute)
    for path in (repo / ".git" / "orange").glob("cache*.sqlite3*"):
        path.unlink()
    for _cold_then_warm in range(2):
        listed = {t.id: t for t in all_tasks(store)}
        assert set(listed) == {"good01", "nofile", "broken", "broken2"}
        assert isinstance(listed["good01"], Task)
        assert listed["good01"].summary == "fine"
        missing, broken, broken2 = listed["nofile"], listed["broken"], listed["broken2"]
        assert isinstance(missing, BrokenTask)
        assert "TASK.md is missing" in missing.error
        assert isinstance(broken, BrokenTask)
        assert broken.error.startswith(f"{layout.task_path('broken')}: ")
        assert "not valid YAML" in broken.error
        assert isinstance(broken2, BrokenTask)
        assert broken2.error.startswith(f"{layout.task_path('broken2')}: ")


@pytest.mark.parametrize("part", ["file", "folder", "shard"])
@pytest.mark.parametrize("harm", ["damaged", "missing"])
def test_an_object_git_cannot_read_is_one_broken_entry_until_it_is_repaired(
    repo: Path, part: str, harm: str
) -> None:
    """A task whose file, folder or shard git cannot read from this clone's objects
    (damaged on disk, or missing) is one broken entry saying so, not a listing that
    stops; its shard is read again at every listing (none of its rows is kept), so the
    task is back once the object is (copied back, fetched again)."""
    store = TaskStore.open(repo)
    put_task(store, "dmg001", summary="one")
    put_task(store, "fine01", summary="two")
    assert layout.shard("dmg001") != layout.shard("fine01")
    assert _summaries(store) == {"dmg001": "one", "fine01": "two"}  # the shard indexed
    set_field(store, "dmg001", "summary", "three")  # new objects for its file and trees
    shard_dir = layout.task_dir("dmg001").rsplit("/", 1)[0]
    path = {"file": layout.task_path("dmg001"), "folder": layout.task_dir("dmg001")}
    oid = git(repo, "rev-parse", f"{layout.TASKS_REF}:{path.get(part, shard_dir)}").strip()
    held = damage(repo, oid)
    if harm == "missing":
        (repo / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    reason = {
        "file": f"{layout.task_path('dmg001')}: TASK.md cannot be read: ",
        "folder": f"{layout.task_path('dmg001')}: its folder cannot be read: ",
        "shard": f"{shard_dir}/TASK.md: its shard cannot be read: ",
    }[part]
    for _listing in range(2):  # the first finds it, the second does not take it as kept
        listed = all_tasks(store)
        assert [t.id for t in listed if isinstance(t, Task)] == ["fine01"]
        broken = [t for t in listed if isinstance(t, BrokenTask)]
        assert len(broken) == 1 and broken[0].error.startswith(reason), broken
    if part != "shard":  # read alone (`task show`, a move): the same one-line error
        with pytest.raises(BrokenTaskFile) as raised:
            store.get("dmg001")
        assert raised.value.message.startswith(reason)
    assert store.resolve("fine") == "fine01"  # a prefix, past the damaged folders
    with pytest.raises(NotFound):
        store.resolve("nope")
    if part == "file":
        assert store.snapshot().misplaced_reason(layout.task_dir("dmg001")).startswith(reason)
    damage(repo, oid, held)  # repaired
    assert _summaries(store) == {"dmg001": "three", "fine01": "two"}


def test_a_damaged_shard_that_leaves_the_ref_leaves_the_listing(repo: Path) -> None:
    """A shard git could not read, then removed from the ref (its one task deleted), is
    no longer listed once another shard changes: its rows go with it."""
    store = TaskStore.open(repo)
    put_task(store, "dmg001", summary="one")
    put_task(store, "fine01", summary="two")
    put_task(store, "keep01", summary="kept")  # a shard that does not change
    assert _summaries(store) == {"dmg001": "one", "fine01": "two", "keep01": "kept"}
    set_field(store, "dmg001", "summary", "new")  # a new file, then damaged
    blob = git(repo, "rev-parse", f"{layout.TASKS_REF}:{layout.task_path('dmg001')}").strip()
    held = damage(repo, blob)
    assert [t.id for t in all_tasks(store) if isinstance(t, BrokenTask)] == ["dmg001"]

    def delete(snap: Snapshot) -> Change:
        path = layout.task_path("dmg001")
        return Change(task_id="dmg001", event="task.deleted", subject="gone", writes={path: None})

    store.commit(delete)
    set_field(store, "fine01", "summary", "three")
    assert {t.id for t in all_tasks(store)} == {"fine01", "keep01"}
    damage(repo, blob, held)
    assert _summaries(store) == {"fine01": "three", "keep01": "kept"}


def test_a_cold_listing_never_shows_a_swapped_object_that_show_refuses(repo: Path) -> None:
    """A loose object whose content is not its name (swapped on disk, valid zlib): the
    cold listing reads it with libgit2's hash check on, as `task show` does, so both
    refuse it (one broken entry), where the listing used to show the swapped text."""
    store = TaskStore.open(repo)
    put_task(store, "hash01", summary="one")
    put_task(store, "fine01", summary="fine")
    blob = git(repo, "rev-parse", f"{layout.TASKS_REF}:{layout.task_path('hash01')}").strip()
    forged = b"---\nid: hash01\nproject: proj\nbranch: b\nstatus: pending\nsummary: forged\n---\n"
    damage(repo, blob, zlib.compress(b"blob %d\0" % len(forged) + forged))
    _no_cache(repo)
    store = TaskStore.open(repo)
    listed = all_tasks(store)
    assert _summaries(store) == {"fine01": "fine"}
    assert [t.id for t in listed if isinstance(t, BrokenTask)] == ["hash01"]
    with pytest.raises(BrokenTaskFile):
        store.get("hash01")
    with pytest.raises(pygit2.GitError, match="hash mismatch"):  # the check is on after it
        pygit2.Repository(str(repo))[blob].read_raw()


def test_a_cold_listing_gives_the_entries_the_cache_gives_back(repo: Path) -> None:
    store = TaskStore.open(repo)
    for n in range(30):  # in about as many shards
        put_task(store, f"t{n:03d}", summary=f"s{n}")
    for path in (repo / ".git" / "orange").glob("cache*.sqlite3*"):
        path.unlink()
    cold = entries(store.snapshot())
    warm = entries(store.snapshot())
    assert cold == warm  # the same entries, in the same order
    assert len(cold) == 30


def test_a_known_text_field_written_as_a_number_is_listed_as_text(repo: Path) -> None:
    """The cache's JSON text is made by the flat reader; a known text field a human
    wrote as a bare number is read as text, and listed as the text it is read as."""
    store = TaskStore.open(repo)
    put_task(store, "plain01", summary="words")
    writes: dict[str, bytes | None] = {
        layout.task_path("num01"): b"---\nid: 'num01'\nsummary: 42\nreview_round: 7\n---\n",
    }
    store.commit(lambda snap: Change(task_id="num01", event="test", subject="hand", writes=writes))
    for path in (repo / ".git" / "orange").glob("cache*.sqlite3*"):
        path.unlink()
    listed = {entry.task_id: entry for entry in entries(store.snapshot())}
    assert listed["num01"].fields_json == '{"id": "num01", "summary": "42", "review_round": 7}'
    plain = listed["plain01"].fields_json
    assert plain is not None and json.loads(plain) == store.get("plain01").fields


def test_a_cache_an_older_orange_made_is_read_and_refreshed(repo: Path) -> None:
    """A cache file made before (4 KiB pages, no tables yet) is used as it is."""
    store = TaskStore.open(repo)
    put_task(store, "page01", summary="one")
    db_path = cache.cache_path(repo / ".git" / "orange")
    for path in db_path.parent.glob("cache*.sqlite3*"):
        path.unlink()
    with sqlite3.connect(db_path) as db:  # an older Orange's cache
        db.execute("PRAGMA page_size=4096")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    put_task(store, "page02", summary="two")
    assert _summaries(store) == {"page01": "one", "page02": "two"}


def test_a_new_cache_is_built_apart_and_moved_into_place(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold listing builds the cache in a file of its own (written once, without a
    journal) and then gives it the cache's name, in WAL mode as the shared file is
    used: the cache's name appears only when the build is done, so no listing waits on
    it, and nothing else is left in the folder."""
    store = TaskStore.open(repo)
    put_task(store, "cold01", summary="one")
    put_task(store, "cold02", summary="two")
    orange_dir, db_path = _no_cache(repo)
    parse = listing._parse_for_cache
    named_while_parsing: list[bool] = []

    def watched(raw: bytes, path: str) -> tuple[dict[str, object] | None, str | None, str | None]:
        named_while_parsing.append(db_path.exists())
        return parse(raw, path)

    monkeypatch.setattr(listing, "_parse_for_cache", watched)
    assert _summaries(store) == {"cold01": "one", "cold02": "two"}
    assert named_while_parsing == [False, False]
    assert sorted(path.name for path in orange_dir.glob("cache*")) == [db_path.name]
    with closing(sqlite3.connect(db_path)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("SELECT count(*) FROM entries").fetchone() == (2,)
    named_while_parsing.clear()
    assert _summaries(store) == {"cold01": "one", "cold02": "two"}
    assert named_while_parsing == []  # warm: read from the placed file


def test_a_killed_builds_file_is_removed_and_a_running_ones_kept(repo: Path) -> None:
    """A build whose process was killed leaves its private file (megabytes at 10,000
    tasks): the next cold build removes those older than any build takes, and leaves
    a recent one (another listing's build still running)."""
    store = TaskStore.open(repo)
    put_task(store, "kill01", summary="one")
    _orange_dir, db_path = _no_cache(repo)
    killed = db_path.with_name(f"{db_path.name}.4242.0badf00d")
    running = db_path.with_name(f"{db_path.name}.4343.600dcafe")
    kept = db_path.with_name(f"{db_path.name}.saved-by-me")  # no name a build gives
    killed.write_bytes(b"half a cache")
    running.write_bytes(b"a cache being built")
    kept.write_bytes(b"the user's")
    old = time.time() - cachefile._STALE_SECONDS - 60
    os.utime(killed, (old, old))
    os.utime(kept, (old, old))
    assert _summaries(store) == {"kill01": "one"}
    assert not killed.exists()
    assert running.read_bytes() == b"a cache being built"
    assert kept.read_bytes() == b"the user's"


def test_a_new_cache_is_moved_into_place_without_hard_links_or_left_to_the_shared_file(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a file system without hard links the built file is moved into place; when no
    private file can be built at all, the listing builds the shared file as before."""
    store = TaskStore.open(repo)
    put_task(store, "link01", summary="one")
    orange_dir, db_path = _no_cache(repo)

    def no_links(source: Path, target: Path) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    assert _summaries(store) == {"link01": "one"}
    assert sorted(path.name for path in orange_dir.glob("cache*")) == [db_path.name]
    db_path.unlink()
    opened = cachefile._open

    def shared_only(path: Path) -> sqlite3.Connection:
        if path != db_path:
            raise sqlite3.OperationalError("unable to open database file")
        return opened(path)

    monkeypatch.setattr(cachefile, "_open", shared_only)
    put_task(store, "link02", summary="two")
    assert _summaries(store) == {"link01": "one", "link02": "two"}
    with closing(sqlite3.connect(db_path)) as db:
        assert db.execute("SELECT count(*) FROM entries").fetchone() == (2,)


def test_a_cache_placed_by_another_listing_meanwhile_is_kept(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two cold listings at once both build; the file placed first stays (another
    process may have it open), and the second listing still lists from its own build."""
    store = TaskStore.open(repo)
    put_task(store, "race01", summary="one")
    orange_dir, db_path = _no_cache(repo)
    parse = listing._parse_for_cache

    def raced(raw: bytes, path: str) -> tuple[dict[str, object] | None, str | None, str | None]:
        if not db_path.exists():  # the other listing places its file during our build
            with closing(sqlite3.connect(db_path)) as db:
                db.execute("PRAGMA journal_mode=WAL")
        return parse(raw, path)

    monkeypatch.setattr(listing, "_parse_for_cache", raced)
    assert _summaries(store) == {"race01": "one"}
    with closing(sqlite3.connect(db_path)) as db:  # the other's file, untouched
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == []
    assert sorted(path.name for path in orange_dir.glob("cache*")) == [db_path.name]
    assert _summaries(store) == {"race01": "one"}  # and used from then on


def test_an_older_oranges_cache_file_is_dropped_and_never_shared(repo: Path) -> None:
    """Each version of the cache has its own file: an older Orange still running (a
    monitor, a dashboard) and a newer one never drop each other's tables.  The file of
    the versions before 6 goes at this version's first listing."""
    store = TaskStore.open(repo)
    put_task(store, "old001", summary="one")
    orange_dir = repo / ".git" / "orange"
    for path in orange_dir.glob("cache*.sqlite3*"):
        path.unlink()
    legacy = orange_dir / "cache.sqlite3"
    with closing(sqlite3.connect(legacy)) as db, db:  # as version 5 left it
        db.execute("CREATE TABLE blobs (blob TEXT PRIMARY KEY, fields TEXT)")
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('version', '5')")
    assert _summaries(store) == {"old001": "one"}
    assert not legacy.exists()
    assert cache.cache_path(orange_dir).name == "cache-6.sqlite3"
    assert cache.cache_path(orange_dir).exists()


def test_a_cache_another_process_is_writing_is_waited_for_then_left_alone(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listing that cannot get the cache (another process writes it past the wait)
    lists uncached and leaves the file to its writer instead of deleting it."""
    store = TaskStore.open(repo)
    put_task(store, "busy01", summary="one")
    assert _summaries(store) == {"busy01": "one"}
    db_path = cache.cache_path(repo / ".git" / "orange")
    inode = db_path.stat().st_ino
    monkeypatch.setattr(cachefile, "_BUSY_SECONDS", 0.1)
    with closing(sqlite3.connect(db_path, isolation_level=None)) as writer:
        writer.execute("BEGIN IMMEDIATE")  # a writer holding the cache
        put_task(store, "busy02", summary="two")
        assert _summaries(store) == {"busy01": "one", "busy02": "two"}
        assert db_path.stat().st_ino == inode  # not deleted under its writer
        writer.execute("COMMIT")
    assert _summaries(store) == {"busy01": "one", "busy02": "two"}
