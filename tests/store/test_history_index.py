"""The history index (`orange.store.history`) answers as one full walk of the history
does: built in slices, compared shard by shard as bytes where the ``tasks/`` tree has
the layout's shape, after merges, after a ref rewritten to a hostile history, and past
a build that stopped half way."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from orange.store import history, layout
from orange.store.store import TaskStore
from orange.store.tree import apply_writes
from tests.conftest import git
from tests.store.helpers import put_task, set_field

IDS = [f"task{n:04d}" for n in range(12)]


def _commit(repo: pygit2.Repository, parents: list[str], tree: pygit2.Oid, subject: str) -> str:
    person = pygit2.Signature("Someone", "someone@example.com", 1_780_000_000, 0)
    oid = repo.create_commit(None, person, person, f"{subject}\n", tree, parents)
    return str(oid)


def _with_tasks_tree(repo: pygit2.Repository, parent: str, raw: bytes) -> pygit2.Oid:
    """The parent's root tree with ``tasks/`` replaced by the raw tree ``raw``."""
    tasks = repo.odb.write(pygit2.enums.ObjectType.TREE, raw)
    builder = repo.TreeBuilder(repo[parent].peel(pygit2.Commit).tree)
    builder.insert("tasks", tasks, pygit2.enums.FileMode.TREE)
    return builder.write()


def _tasks_raw(repo: pygit2.Repository, commit: str) -> bytes:
    tree = repo[commit].peel(pygit2.Commit).tree
    return bytes(repo.odb.read(tree["tasks"].id)[1])


def _reference(repo: pygit2.Repository, tip: str) -> list[history.Indexed]:
    return list(history._new_rows(repo, tip, None, shaped=False))


def _rows_by_task(rows: list[history.Indexed]) -> dict[str, list[tuple[object, ...]]]:
    """A task's rows, the first of a commit's kept (a hostile tree can name a task in
    two shards: one row a commit and task, in the index)."""
    found: dict[str, list[tuple[object, ...]]] = {}
    seen = set()
    for commit, task, message, time, old, new in rows:
        if (commit, task) not in seen:
            seen.add((commit, task))
            found.setdefault(task, []).append((commit, message, time, old, new))
    return found


def _index(store: TaskStore, tip: str, task: str) -> list[tuple[object, ...]]:
    db = store.repo.orange_dir() / "history.sqlite3"
    return [
        (row.commit, row.message, row.time, row.from_status, row.to_status)
        for row in history.commits_of(db, store.pygit, tip, task)
    ]


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A repository whose tasks ref has two histories: Orange's writes over a dozen
    tasks with a plain-git side line merged in (the first tip), and a rewrite of it
    with hostile ``tasks/`` trees (the second)."""
    from tests.conftest import make_repo

    path = make_repo(tmp_path_factory.mktemp("history") / "proj")
    store = TaskStore.open(path)
    repo = store.pygit
    for task in IDS:
        put_task(store, task)
    fork = str(repo.references[layout.TASKS_REF].target)
    for n in range(30):
        set_field(store, IDS[n % len(IDS)], "summary", f"summary {n}")
    side_tree = apply_writes(
        repo,
        repo[fork].peel(pygit2.Commit).tree,
        {layout.task_path(IDS[3]): b"---\nid: task0003\nstatus: working\n---\nby hand\n"},
    )
    assert side_tree is not None
    side = _commit(repo, [fork], side_tree, "edited by hand")
    main = str(repo.references[layout.TASKS_REF].target)
    merged_tree = apply_writes(
        repo,
        repo[main].peel(pygit2.Commit).tree,
        {layout.task_path(IDS[3]): b"---\nid: task0003\nstatus: review\n---\nmerged\n"},
    )
    assert merged_tree is not None
    merge = _commit(repo, [main, side], merged_tree, "merge")
    git(path, "update-ref", layout.TASKS_REF, merge)
    for n in range(30, 40):
        set_field(store, IDS[n % len(IDS)], "summary", f"summary {n}")
    first = str(repo.references[layout.TASKS_REF].target)

    # The rewrite: from the fork, trees no Orange writes.
    tip = fork
    shaped = _tasks_raw(repo, fork)
    width = 29
    two = bytearray(shaped)  # two shards' ids changed at once (a regular tree)
    for at in (0, len(shaped) - width):
        two[at + 9 : at + width] = bytes(repo[repo[tip].peel(pygit2.Commit).tree.id].id.raw)
    hostile = [
        bytes(two),
        shaped[:width] + shaped[:width] + shaped[2 * width :],  # a shard's name twice
        # ... and the first of the two changed, which git (and the walk) never reads
        shaped[:9] + shaped[2 * width + 9 : 3 * width] + shaped[:width] + shaped[2 * width :],
        shaped + b"100644 zz-notes\0" + bytes(repo.odb.write(3, b"notes\n").raw),  # a blob
        b"160000" + shaped[5:],  # a mode changed: a gitlink where a shard was
        shaped[:6] + b"zz" + shaped[8:],  # a name that is no shard's
        shaped,  # back to Orange's shape
    ]
    for n, raw in enumerate(hostile):
        tip = _commit(repo, [tip], _with_tasks_tree(repo, tip, raw), f"hostile {n}")
    git(path, "update-ref", layout.TASKS_REF, tip)
    store = TaskStore.open(path)
    for n in range(8):
        set_field(store, IDS[(n * 5) % len(IDS)], "summary", f"after {n}")
    second = str(store.pygit.references[layout.TASKS_REF].target)
    git(path, "update-ref", layout.TASKS_REF, first)
    return path, first, second


def test_the_byte_comparison_finds_what_the_walk_finds(histories: tuple[Path, str, str]) -> None:
    path, first, second = histories
    repo = pygit2.Repository(str(path))
    for tip in (first, second):
        reference = _reference(repo, tip)
        assert list(history._new_rows(repo, tip, None)) == reference
        tasks = {row[1] for row in reference}
        assert set(IDS) <= tasks  # every task, and the hostile trees' odd entries
    changed_by = {row[2].split("\n")[0] for row in _reference(repo, second)}
    assert {"hostile 0", "hostile 1", "hostile 3", "hostile 5"} <= changed_by


def test_an_index_built_in_slices_answers_as_one_walk_also_after_a_rewrite(
    histories: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, first, second = histories
    monkeypatch.setattr(history, "SLICE", 7)
    store = TaskStore.open(path)
    (store.repo.orange_dir() / "history.sqlite3").unlink(missing_ok=True)
    for tip in (first, second, first):  # built, rewritten to a hostile history, back
        expected = _rows_by_task(_reference(store.pygit, tip))
        for task in [*IDS, "zz-notes"]:
            assert _index(store, tip, task) == expected.get(task, [])
    merge = next(row for row in _reference(store.pygit, first) if row[2] == "merge\n")
    assert merge[1] == IDS[3] and (merge[4], merge[5]) == ("pending", "review")


def test_a_build_stopped_half_way_goes_on_from_its_last_slice(
    histories: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, first, _second = histories
    monkeypatch.setattr(history, "SLICE", 10)
    store = TaskStore.open(path)
    db = store.repo.orange_dir() / "history.sqlite3"
    db.unlink(missing_ok=True)
    extend = history._extend
    walked: list[str | None] = []

    def stops_at_the_third(*args: object, **options: bool) -> None:
        walked.append(args[3])  # type: ignore[arg-type]
        if len(walked) == 3:
            raise KeyboardInterrupt
        extend(*args, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(history, "_extend", stops_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        _index(store, first, IDS[0])
    done = walked[2]  # the tip the index was whole for when it stopped
    assert done is not None
    walked.clear()

    def goes_on(*args: object, **options: bool) -> None:
        walked.append(args[3])  # type: ignore[arg-type]
        extend(*args, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(history, "_extend", goes_on)
    expected = _rows_by_task(_reference(store.pygit, first))
    assert _index(store, first, IDS[0]) == expected[IDS[0]]
    assert walked[0] == done  # went on from there, not from the root
