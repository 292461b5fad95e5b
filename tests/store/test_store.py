from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from orange.errors import BrokenTaskFile, SchemaTooNew
from orange.store import layout
from orange.store.events import Change
from orange.store.history import task_history
from orange.store.listing import all_tasks
from orange.store.store import TaskStore
from orange.store.task import BrokenTask, Task
from tests.conftest import damage, git
from tests.store.helpers import put_task, set_field


def test_task_lives_in_a_sharded_path_with_schema(repo: Path) -> None:
    store = TaskStore.open(repo)
    put_task(store, "abc123", body="\n## Context\n\nhello\n")
    shard = hashlib.sha1(b"abc123").hexdigest()[:2]
    files = git(repo, "ls-tree", "-r", "--name-only", layout.TASKS_REF).split()
    assert f"tasks/{shard}/abc123/TASK.md" in files
    assert git(repo, "show", f"{layout.TASKS_REF}:meta/schema").strip() == "1"
    text = git(repo, "show", f"{layout.TASKS_REF}:tasks/{shard}/abc123/TASK.md")
    assert text.endswith("\n## Context\n\nhello\n")


def test_commit_has_readable_subject_and_trailers(repo: Path) -> None:
    store = TaskStore.open(repo)
    put_task(store, "abc123")
    set_field(store, "abc123", "summary", "new words")
    message = git(repo, "log", "-1", "--format=%B", layout.TASKS_REF)
    assert message.splitlines()[0] == "task abc123: updated summary"
    assert "Orange-Task: abc123" in message
    assert "Orange-Event: task.updated" in message
    assert "Orange-Actor: cli" in message
    assert "Orange-Fields: summary" in message
    history = task_history(store, "abc123")
    assert [h.event for h in history] == ["task.created", "task.updated"]


def test_writes_never_touch_head_index_or_worktree(repo: Path) -> None:
    (repo / "dirty.txt").write_text("uncommitted\n")
    (repo / "staged.txt").write_text("staged\n")
    git(repo, "add", "staged.txt")
    head = git(repo, "rev-parse", "HEAD")
    status = git(repo, "status", "--porcelain")
    index = (repo / ".git" / "index").read_bytes()
    store = TaskStore.open(repo)
    put_task(store, "abc123")
    set_field(store, "abc123", "summary", "changed")
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == status
    assert (repo / ".git" / "index").read_bytes() == index
    assert not (repo / "tasks").exists()


def test_works_from_linked_worktree_and_subdirectory(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(wt))
    (repo / "sub" / "deeper").mkdir(parents=True)
    put_task(TaskStore.open(wt), "fromwt")
    put_task(TaskStore.open(repo / "sub" / "deeper"), "fromsub")
    ids = {t.id for t in all_tasks(TaskStore.open(repo))}
    assert ids == {"fromwt", "fromsub"}
    assert TaskStore.open(wt).repo.common_dir == TaskStore.open(repo).repo.common_dir


def test_newer_schema_refuses_to_write(repo: Path) -> None:
    store = TaskStore.open(repo)
    put_task(store, "abc123")

    def bump(snap: object) -> Change:
        return Change(
            task_id="-", event="test", subject="future", writes={layout.SCHEMA_PATH: b"99\n"}
        )

    store.commit(bump)
    before = git(repo, "rev-parse", layout.TASKS_REF)
    with pytest.raises(SchemaTooNew, match="upgrade Orange"):
        set_field(store, "abc123", "summary", "x")
    assert git(repo, "rev-parse", layout.TASKS_REF) == before


def test_resolve_by_unique_prefix(repo: Path) -> None:
    store = TaskStore.open(repo)
    put_task(store, "abc111")
    put_task(store, "abd222")
    assert store.resolve("abc") == "abc111"
    assert store.resolve("abd222") == "abd222"
    with pytest.raises(Exception, match="ambiguous"):
        store.resolve("ab")
    with pytest.raises(Exception, match="no task"):
        store.resolve("zzz")


def test_broken_task_is_listed_with_its_path_and_others_still_list(repo: Path) -> None:
    store = TaskStore.open(repo)
    put_task(store, "good01")
    bad_path = layout.task_path("bad001")

    def corrupt(snap: object) -> Change:
        return Change(
            task_id="bad001",
            event="test",
            subject="corrupt",
            writes={bad_path: b"---\nid: [oops\n---\nbody\n"},
        )

    store.commit(corrupt)
    listed = all_tasks(store)
    good = [t for t in listed if isinstance(t, Task)]
    broken = [t for t in listed if isinstance(t, BrokenTask)]
    assert [t.id for t in good] == ["good01"]
    assert len(broken) == 1
    assert broken[0].path == bad_path
    assert "not valid YAML" in broken[0].error


def test_no_op_write_makes_no_commit(repo: Path) -> None:
    store = TaskStore.open(repo)
    put_task(store, "abc123")
    before = git(repo, "rev-parse", layout.TASKS_REF)
    assert set_field(store, "abc123", "status", "pending") is None
    assert git(repo, "rev-parse", layout.TASKS_REF) == before


def test_identical_broken_files_each_name_their_own_path(repo: Path) -> None:
    store = TaskStore.open(repo)
    paths = [layout.task_path("brokena"), layout.task_path("brokenb")]

    def corrupt(snap: object) -> Change:
        return Change(
            task_id="x",
            event="test",
            subject="corrupt",
            writes=dict.fromkeys(paths, b"---\nid: [oops\n---\n"),
        )

    store.commit(corrupt)
    broken = {t.path: t.error for t in all_tasks(store) if isinstance(t, BrokenTask)}
    assert set(broken) == set(paths)
    for path, error in broken.items():
        assert error.startswith(f"{path}: ")


def test_a_broken_file_in_the_wrong_folder_is_shown_with_its_path(repo: Path) -> None:
    store = TaskStore.open(repo)
    path = "tasks/00/misplaced/TASK.md"  # not the shard sha1("misplaced") gives

    def corrupt(snap: object) -> Change:
        return Change(
            task_id="misplaced",
            event="test",
            subject="corrupt",
            writes={path: b"---\nid: [oops\n---\n"},
        )

    store.commit(corrupt)
    assert [t.path for t in all_tasks(store) if isinstance(t, BrokenTask)] == [path]
    with pytest.raises(BrokenTaskFile, match=f"^{path}: frontmatter is not valid YAML"):
        store.get("misplaced")


def test_history_index_follows_new_commits_rewinds_and_corruption(repo: Path) -> None:
    store = TaskStore.open(repo)
    put_task(store, "hist01")
    put_task(store, "other1")
    set_field(store, "hist01", "summary", "one")
    assert [h.event for h in task_history(store, "hist01")] == ["task.created", "task.updated"]
    rewind_to = git(repo, "rev-parse", layout.TASKS_REF).strip()
    set_field(store, "hist01", "summary", "two", subject="task hist01: second update")
    history = task_history(store, "hist01")  # extended incrementally
    assert [h.subject for h in history][-1] == "task hist01: second update"
    assert [h.event for h in task_history(store, "other1")] == ["task.created"]
    git(repo, "update-ref", layout.TASKS_REF, rewind_to)  # moved back by plain git
    assert [h.event for h in task_history(store, "hist01")] == ["task.created", "task.updated"]
    db = repo / ".git" / "orange" / "history.sqlite3"
    db.write_bytes(b"garbage" * 50)
    assert len(task_history(store, "hist01")) == 2  # rebuilt silently


def test_the_tasks_ref_keeps_a_reflog_of_orange_writes(repo: Path) -> None:
    setting = git(repo, "config", "--get", "core.logAllRefUpdates", check=False)
    store = TaskStore.open(repo)
    put_task(store, "aaa11111")
    set_field(store, "aaa11111", "summary", "second", subject="task aaa11111: updated summary")
    log = git(repo, "reflog", "show", "--format=%gs", layout.TASKS_REF).splitlines()
    assert log[0] == "orange: task aaa11111: updated summary"
    assert len(log) == 2 and log[1].startswith("orange: task aaa11111: created")
    # kept for this ref only: the user's setting for the repository is untouched
    assert git(repo, "config", "--get", "core.logAllRefUpdates", check=False) == setting


def test_a_tasks_history_reads_past_objects_git_cannot_read(repo: Path) -> None:
    """A healthy task's history is read when another task's shard, changed by a later
    commit, cannot be read from this clone's objects (a damaged object reads as none, as
    a missing one does) instead of stopping `task show` and `task log`."""
    store = TaskStore.open(repo)
    put_task(store, "hist01", summary="one")
    put_task(store, "dmg001", summary="two")
    set_field(store, "dmg001", "summary", "three")
    assert layout.shard("hist01") != layout.shard("dmg001")
    shard = layout.task_dir("dmg001").rsplit("/", 1)[0]
    damage(repo, git(repo, "rev-parse", f"{layout.TASKS_REF}:{shard}").strip())
    assert [h.event for h in task_history(store, "hist01")] == ["task.created"]
