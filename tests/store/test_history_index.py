"""A task's history (`orange.store.history`): git's path-limited walk, decided commit
by commit, answers as the walk over every commit does, on Orange's writes, plain-git
commits, merges of every kind and hostile trees along the task's own path; the cache
extended tip by tip answers as one walk, also across a rewritten ref; where git cannot
walk (a damaged object on the path, no git at all) the walk over every commit answers."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import NamedTuple, Never

import pygit2
import pytest

from orange.store import commitgraph, history, layout
from orange.store.store import TaskStore
from tests.conftest import damage, git
from tests.helpers import retry_until
from tests.store.helpers import put_task, set_field

IDS = [f"task{n:04d}" for n in range(12)]
TASK = IDS[3]  # the task every hostile tree is aimed at
TREE, BLOB, LINK = 0o040000, 0o100644, 0o160000


class Histories(NamedTuple):
    path: Path
    tips: list[str]  # the tasks ref along the first history, then a rewrite, then back
    first: str  # the first history's tip
    corrupt: set[str]  # commits whose trees (or their parent's) git's fsck calls corrupt


def _commit(repo: pygit2.Repository, parents: list[str], tree: pygit2.Oid, message: str) -> str:
    person = pygit2.Signature("Someone", "someone@example.com", 1_780_000_000, 0)
    return str(repo.create_commit(None, person, person, message, tree, parents))


def _tree(repo: pygit2.Repository, commit: str) -> pygit2.Oid:
    return repo[commit].peel(pygit2.Commit).tree_id


def _put(
    repo: pygit2.Repository,
    tree: pygit2.Oid | None,
    path: str,
    entry: tuple[int, pygit2.Oid] | None,
) -> pygit2.Oid:
    """``tree`` with the entry at ``path`` set to (mode, id), or removed (None)."""
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    name, _, rest = path.partition("/")
    if rest:
        below = builder.get(name)
        inner = below.id if below is not None and below.filemode == TREE else None
        builder.insert(name, _put(repo, inner, rest, entry), TREE)
    elif entry is None:
        builder.remove(name)
    else:
        builder.insert(name, entry[1], entry[0])
    return builder.write()


def _file(
    repo: pygit2.Repository, status: str, text: str = "", task: str = TASK
) -> tuple[int, pygit2.Oid]:
    return BLOB, repo.create_blob(f"---\nid: {task}\nstatus: {status}\n---\n{text}\n".encode())


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Histories:
    """Orange's writes over a dozen tasks; plain-git and lying commits on a side line;
    merges taking the task from their second parent, from their first, an unrelated
    root and three parents; every odd tree git can hold where the task's folder is
    (blob, gitlink, a tree for its file, its shard or ``tasks/`` a blob, unsorted and
    doubled names); then a rewrite of the ref from an early commit, then the first
    history again."""
    from tests.conftest import make_repo

    path = make_repo(tmp_path_factory.mktemp("history") / "proj")
    store = TaskStore.open(path)
    repo = store.pygit
    tips: list[str] = []

    def tip() -> str:
        return str(repo.references[layout.TASKS_REF].target)

    def move(commit: str) -> str:
        git(path, "update-ref", layout.TASKS_REF, commit)
        return commit

    for task in IDS:
        put_task(store, task)
    for n in range(24):
        set_field(store, IDS[n % len(IDS)], "summary", f"summary {n}")
    fork = tip()
    tips.append(fork)
    folder, task_md = layout.task_dir(TASK), layout.task_path(TASK)
    other_md = layout.task_path(IDS[0])

    # A side line: a plain-git edit, then a commit naming another task that edits this one.
    side = _commit(
        repo, [fork], _put(repo, _tree(repo, fork), task_md, _file(repo, "working")), "by hand\n"
    )
    lying = f"task {IDS[0]}: summary\n\nOrange-Task: {IDS[0]}\nOrange-Event: task.updated\n"
    side = _commit(
        repo, [side], _put(repo, _tree(repo, side), task_md, _file(repo, "review")), lying
    )
    set_field(store, IDS[5], "summary", "on main")
    set_field(store, TASK, "summary", "on main")
    main = tip()
    # A merge taking the task from its second parent (a sync merge's trailer).
    merged = _put(repo, _tree(repo, main), task_md, _file(repo, "review"))  # side's file
    tips.append(move(_commit(repo, [main, side], merged, "merge\n\nOrange-Merge: 1\n")))
    # A merge taking it from its first parent: not a change of the task.
    other = _commit(
        repo,
        [fork],
        _put(repo, _tree(repo, fork), other_md, _file(repo, "x", task=IDS[0])),
        "other\n",
    )
    set_field(store, TASK, "summary", "before the second merge")
    ours = _put(repo, _tree(repo, tip()), other_md, _file(repo, "x", task=IDS[0]))
    move(_commit(repo, [tip(), other], ours, "merge keeping ours\n"))
    # A root of its own (the task's folder in it differs) merged in, and three parents.
    root = _commit(repo, [], _put(repo, None, task_md, _file(repo, "done")), "unrelated root\n")
    move(_commit(repo, [tip(), root], _tree(repo, tip()), "merge of a root\n"))
    three = _put(repo, _tree(repo, tip()), task_md, _file(repo, "blocked"))
    tips.append(move(_commit(repo, [tip(), side, other], three, "three parents\n")))
    # A merge whose first parent is behind the last tip: the task taken from its second.
    behind = repo[tip()].peel(pygit2.Commit).parent_ids[0]
    ahead = _commit(
        repo, [tip()], _put(repo, _tree(repo, tip()), task_md, _file(repo, "ahead")), "ahead\n"
    )
    tips.append(
        move(_commit(repo, [str(behind), ahead], _tree(repo, ahead), "merge from behind\n"))
    )

    # Odd trees where the task's folder is, each from the one before.
    raw_tasks = bytes(repo.odb.read(repo[_tree(repo, tip())].peel(pygit2.Tree)["tasks"].id)[1])
    shard = layout.shard(TASK).encode()
    at = raw_tasks.index(b" " + shard + b"\0") - 5  # the task's shard entry
    entry = raw_tasks[at : at + 29]
    notes = repo.create_blob(b"notes\n")
    odd: list[tuple[str, str | None, tuple[int, pygit2.Oid] | None]] = [
        ("its file a tree", task_md, (TREE, _put(repo, None, "x", (BLOB, notes)))),
        ("its folder a blob", folder, (BLOB, notes)),
        ("its folder a gitlink", folder, (LINK, repo[fork].id)),
        ("its shard a blob", folder.rsplit("/", 1)[0], (BLOB, notes)),
        ("tasks/ a blob", "tasks", (BLOB, notes)),
        ("restored", "tasks", (TREE, repo.odb.write(pygit2.enums.ObjectType.TREE, raw_tasks))),
        ("non-UTF-8 status", task_md, (BLOB, repo.create_blob(b"---\nstatus: \xff\xfe\n---\n"))),
        ("back", task_md, _file(repo, "pending")),
        ("removed", folder, None),
        ("added again", task_md, _file(repo, "pending", "again")),
    ]
    for subject, where, put in odd:
        assert where is not None
        tree = _put(repo, _tree(repo, tip()), where, put)
        move(_commit(repo, [tip()], tree, f"{subject}\n"))
    # Raw ``tasks/`` trees git would refuse on fsck: the task's shard entry moved last
    # (names out of order), and named twice (another tree first).
    changed = _put(
        repo,
        repo[_tree(repo, tip())].peel(pygit2.Tree)["tasks"].id,
        f"{shard.decode()}/{TASK}/TASK.md",
        _file(repo, "odd"),
    )
    moved = bytes(repo.odb.read(changed)[1])
    entry = moved[at : at + 29]
    malformed = [
        ("shard last", moved[:at] + moved[at + 29 :] + entry),
        ("shard twice", moved[:at] + raw_tasks[at : at + 29] + moved[at:]),
        ("in order again", moved),
    ]
    corrupt = set()
    for subject, raw in malformed:
        tasks = (TREE, repo.odb.write(pygit2.enums.ObjectType.TREE, raw))
        corrupt.add(
            move(
                _commit(
                    repo, [tip()], _put(repo, _tree(repo, tip()), "tasks", tasks), f"{subject}\n"
                )
            )
        )
    liar = f"task {TASK}: summary\n\nOrange-Task: {TASK}\nOrange-Event: task.updated\n"
    changes_other = _put(repo, _tree(repo, tip()), other_md, _file(repo, "y", task=IDS[0]))
    tips.append(move(_commit(repo, [tip()], changes_other, liar)))  # names it, changes another
    store = TaskStore.open(path)
    for n in range(6):
        set_field(store, IDS[(n * 5) % len(IDS)], "summary", f"after {n}")
    first = tip()
    tips.append(first)

    # The rewrite: from the fork, other commits.
    move(fork)
    store = TaskStore.open(path)
    for n in range(4):
        set_field(store, IDS[(n * 3) % len(IDS)], "summary", f"rewritten {n}")
    tips.append(tip())
    tips.append(move(first))
    return Histories(path, tips, first, corrupt)


def _orange(path: Path) -> Path:
    return path / ".git" / "orange"


def _same(
    repo: pygit2.Repository,
    found: list[history.Found],
    reference: list[history.Found],
    corrupt: set[str],
) -> None:
    """The same commits with the same statuses, each after its ancestors (two walks may
    order commits of parallel lines differently: none comes before an ancestor of it).
    Where a tree is corrupt (names out of order or twice: git's fsck refuses it), git's
    reading and libgit2's differ and the history follows git's: those commits are left
    out of the comparison."""
    assert Counter(row for row in found if row[0] not in corrupt) == Counter(
        row for row in reference if row[0] not in corrupt
    )
    ids = [row[0] for row in found]
    assert not any(repo.descendant_of(one, then) for one, then in pairwise(ids))


def test_gits_walk_finds_what_the_walk_over_every_commit_finds(histories: Histories) -> None:
    repo = pygit2.Repository(str(histories.path))
    for tip in histories.tips:
        for task in IDS if tip == histories.first else (TASK, IDS[0]):
            found = history.find(repo, tip, task, _orange(histories.path))
            _same(repo, found, history.walked(repo, tip, None, task), histories.corrupt)
    subjects = [
        row[1].split("\n")[0]
        for row in history.find(repo, histories.first, TASK, _orange(histories.path))
    ]
    merges = {"merge", "three parents", "merge from behind"}
    assert {"by hand", f"task {IDS[0]}: summary", *merges} <= set(subjects)
    assert not {"merge keeping ours", "merge of a root", f"task {TASK}: summary"} & set(subjects)
    odd = ["its file a tree", "its folder a blob", "its folder a gitlink", "its shard a blob"]
    odd += ["restored", "non-UTF-8 status", "back", "removed", "added again"]  # (no folder
    # before or after "tasks/ a blob": not a change of the task)
    assert [s for s in subjects if s in odd] == odd


def test_a_commit_not_orange_s_record_of_the_task_reads_its_status_from_the_file(
    histories: Histories,
) -> None:
    repo = pygit2.Repository(str(histories.path))
    found = {
        row[1].split("\n")[0]: row[3:]
        for row in history.find(repo, histories.first, TASK, _orange(histories.path))
    }
    assert found["by hand"] == ("pending", "working")
    assert found[f"task {IDS[0]}: summary"] == ("working", "review")  # names another task
    assert found["merge"] == ("pending", "review")
    assert found["merge from behind"] == ("review", "ahead")
    assert found["its file a tree"] == ("ahead", None)
    assert found["non-UTF-8 status"] == ("ahead", None)
    assert found["back"] == (None, "pending")


@pytest.mark.parametrize("extend", [history.EXTEND, 3], ids=["extended", "walked-afresh"])
def test_the_cache_extended_tip_by_tip_answers_as_one_walk(
    histories: Histories, extend: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked at each tip in turn, the cache answers as the walk over every commit from
    that tip: extended by the new commits, or (more than `EXTEND` of them, the ref
    rewritten) walked afresh."""
    monkeypatch.setattr(history, "EXTEND", extend)
    store = TaskStore.open(histories.path)
    db = store.repo.orange_dir() / "history.sqlite3"
    db.unlink(missing_ok=True)
    repo = store.pygit
    for tip in histories.tips:
        for task in (TASK, IDS[0]):
            rows = history.commits_of(db, repo, tip, task)
            found = [(r.commit, r.message, r.time, r.from_status, r.to_status) for r in rows]
            _same(repo, found, history.walked(repo, tip, None, task), histories.corrupt)
            assert [r.own for r in rows] == [
                "\nOrange-Task: " + task + "\n" in r.message for r in rows
            ]


def test_where_git_cannot_walk_the_walk_over_every_commit_answers(
    histories: Histories, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A damaged tree on the task's path stops git (``rev-list`` fails); no git on PATH
    stops it too: the history is still read, as the slow walk reads it."""
    clone = tmp_path / "clone"
    shutil.copytree(histories.path, clone)  # (Orange's writes: loose objects, damaged here)
    (clone / ".git" / "orange" / "history.sqlite3").unlink(missing_ok=True)
    repo = pygit2.Repository(str(clone))
    tip, path = histories.first, layout.task_dir(TASK)
    expected = history.walked(repo, tip, None, TASK)
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert history._candidates(repo, tip, path, _orange(clone)) is None
    _same(repo, history.find(repo, tip, TASK, _orange(clone)), expected, histories.corrupt)
    monkeypatch.undo()
    shard = path.rsplit("/", 1)[0]
    damage(clone, git(clone, "rev-parse", f"{histories.tips[0]}:{shard}").strip())
    assert history._candidates(repo, tip, path, _orange(clone)) is None
    store = TaskStore.open(clone)
    assert [h.subject for h in history.task_history(store, TASK)] == [
        row[1].split("\n")[0] for row in history.walked(store.pygit, tip, None, TASK)
    ]


def _parents_out_of_range(graph: Path) -> None:
    """Point every commit's first parent of each graph file past the graph's end: git
    dies ("invalid parent position") as soon as it reads a commit from it."""
    for file in (graph / "info" / "commit-graphs").glob("*.graph"):
        data = bytearray(file.read_bytes())
        chunks = {
            bytes(data[at : at + 4]): int.from_bytes(data[at + 4 : at + 12], "big")
            for at in range(8, 8 + 12 * (data[6] + 1), 12)
        }
        start, ends = chunks[b"CDAT"], [o for o in chunks.values() if o > chunks[b"CDAT"]]
        for row in range(start, min(ends), 36):
            data[row + 20 : row + 24] = (0x7FFFFFF0).to_bytes(4, "big")
        file.chmod(0o644)
        file.write_bytes(bytes(data))


def test_orange_s_commit_graph_answers_the_same_and_a_damaged_one_is_walked_past(
    histories: Histories, tmp_path: Path
) -> None:
    """With Orange's commit-graph (changed-path filters, in a folder of its own) git's
    walk finds what the walk over every commit finds; the repository's own objects get
    no graph (the user's git is as before).  A graph git dies on is walked past (the
    walk again without it) and dropped; the next update writes it anew."""
    clone = tmp_path / "clone"
    shutil.copytree(histories.path, clone)
    repo, orange = pygit2.Repository(str(clone)), _orange(clone)
    tip = histories.first
    assert commitgraph.update(repo, orange, tip)
    assert commitgraph.covered_tip(orange) == tip
    assert not list((clone / ".git" / "objects" / "info").glob("commit-graph*"))
    for task in IDS:
        expected = history.walked(repo, tip, None, task)
        _same(repo, history.find(repo, tip, task, orange), expected, histories.corrupt)
    env = commitgraph.walk_env(orange)
    assert env is not None
    path = layout.task_dir(TASK)
    read = subprocess.run(
        ["git", "rev-list", "--full-history", tip, "--", path],
        cwd=clone,
        env={**env, "GIT_TRACE2_PERF": str(tmp_path / "trace")},
        capture_output=True,
        check=True,
    )
    assert read.stdout.split()
    # git asked the filters, and they ruled commits out without reading their trees.
    stats = re.findall(r'"definitely_not":([0-9]+)', (tmp_path / "trace").read_text())
    assert stats and int(stats[0]) > 0

    _parents_out_of_range(commitgraph.folder(orange))
    dies = subprocess.run(["git", "rev-list", tip], cwd=clone, env=env, capture_output=True)
    assert dies.returncode != 0
    expected = history.walked(repo, tip, None, TASK)
    _same(repo, history.find(repo, tip, TASK, orange), expected, histories.corrupt)
    assert not commitgraph.folder(orange).exists()
    assert commitgraph.update(repo, orange, tip)
    _same(repo, history.find(repo, tip, TASK, orange), expected, histories.corrupt)


@pytest.mark.parametrize("theirs", ["every-ref", "an-early-tip"])
def test_orange_s_graph_stands_on_its_own_beside_the_user_s_split_graph(
    histories: Histories, tmp_path: Path, theirs: str
) -> None:
    """A user's own split commit-graph (``git maintenance``, ``fetch.writeCommitGraph``)
    is no base of Orange's: git would chain Orange's layer onto the user's files, and
    the user's next graph write (their ``git gc``) deletes them, leaving Orange's graph
    unreadable ("unable to find all commit-graph files") until a thousand more commits."""
    clone = tmp_path / "clone"
    shutil.copytree(histories.path, clone)
    repo, orange = pygit2.Repository(str(clone)), _orange(clone)
    tip = histories.first
    split = ["commit-graph", "write", "--split", "--no-progress"]
    if theirs == "every-ref":  # Orange's layer would hold nothing: theirs, no filters
        git(clone, *split, "--reachable")
    else:  # Orange's layer would be written on top of theirs
        subprocess.run(["git", *split, "--stdin-commits"], cwd=clone, check=True,
                       input=f"{histories.tips[2]}\n".encode())  # fmt: skip
    assert commitgraph.update(repo, orange, tip)
    git(clone, "commit-graph", "write", "--reachable", "--no-progress")  # theirs, rewritten
    env = commitgraph.walk_env(orange)
    assert env is not None
    read = subprocess.run(
        ["git", "rev-list", "--full-history", tip, "--", layout.task_dir(TASK)],
        cwd=clone,
        env={**env, "GIT_TRACE2_PERF": str(tmp_path / "trace")},
        capture_output=True,
        check=True,
    )
    assert b"commit-graph" not in read.stderr
    stats = re.findall(r'"definitely_not":([0-9]+)', (tmp_path / "trace").read_text())
    assert stats and int(stats[0]) > 0


def test_a_cold_walk_of_a_long_history_starts_the_graph_for_the_next(
    histories: Histories, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``task log`` that walks a history of `WORTH` commits or more outside the graph
    starts the graph's update in the background; it comes to cover the tip."""
    monkeypatch.setattr(commitgraph, "WORTH", 20)
    clone = tmp_path / "clone"
    shutil.copytree(histories.path, clone)
    store = TaskStore.open(clone)
    orange = _orange(clone)
    (orange / "history.sqlite3").unlink(missing_ok=True)
    tip = str(store.pygit.references[layout.TASKS_REF].target)
    assert commitgraph.covered_tip(orange) is None
    entries = history.task_history(store, TASK)
    retry_until(lambda: commitgraph.covered_tip(orange) == tip, timeout=30, what="the graph")
    (orange / "history.sqlite3").unlink()
    assert history.task_history(store, TASK) == entries


def test_a_long_history_brought_in_by_a_sync_starts_the_graph(
    histories: Histories, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clone's first sync (`integrate`, a fast-forward from nothing) of a history of
    `WORTH` commits or more starts the graph, so its first ``task log`` finds one."""
    from orange.store.integrate import integrate, remote_ref
    from tests.conftest import make_repo

    monkeypatch.setattr(commitgraph, "WORTH", 20)
    clone = make_repo(tmp_path / "clone")
    git(clone, "fetch", "-q", str(histories.path), f"{layout.TASKS_REF}:{remote_ref('origin')}")
    store = TaskStore.open(clone)

    def planner(*_: object) -> Never:
        raise AssertionError("a fast-forward plans no merge")

    outcome = integrate(store, histories.first, "origin", planner)
    assert outcome.tip == histories.first
    orange = _orange(clone)
    retry_until(lambda: commitgraph.covered_tip(orange) == histories.first, timeout=30)


def test_a_teammate_s_commits_dated_before_the_base_are_listed_once(tmp_path: Path) -> None:
    """The cache read at a line of commits dated before the base it shares with a
    teammate's (a clock behind), then extended past the sync merge: git's walk from the
    merge with the cached tip hidden trusts dates, and went on past the base into what
    the cache holds.  Each commit of the task's history is listed once, after its
    ancestors, as the walk over every commit lists it."""
    from tests.conftest import make_repo

    path = make_repo(tmp_path / "proj")
    store = TaskStore.open(path)
    repo = store.pygit
    task_md = layout.task_path(TASK)

    def edit(date: int, text: str, *parents: str) -> str:
        tree = _tree(repo, parents[0]) if parents else None
        who = pygit2.Signature("Someone", "someone@example.com", date, 0)
        put = _put(repo, tree, task_md, _file(repo, "pending", text))
        return str(repo.create_commit(None, who, who, f"{text}\n", put, list(parents)))

    base = edit(9001, "base", edit(9000, "root"))
    ours = base
    for n in range(8):  # more than git's five steps of slack, all older than theirs
        ours = edit(100, f"ours {n}", ours)
    git(path, "update-ref", layout.TASKS_REF, ours)
    assert len(history.task_history(store, TASK)) == 10  # the cache now holds ``ours``
    theirs = edit(500, "theirs", base)
    who = pygit2.Signature("Someone", "someone@example.com", 9003, 0)
    merge = str(repo.create_commit(None, who, who, "sync\n", _tree(repo, theirs), [ours, theirs]))
    git(path, "update-ref", layout.TASKS_REF, merge)
    listed = [entry.commit for entry in history.task_history(store, TASK)]
    assert sorted(listed) == sorted(row[0] for row in history.walked(repo, merge, None, TASK))
    assert len(listed) == len(set(listed)) == 12
    assert listed[-2:] == [theirs, merge]
    for at, one in enumerate(listed):  # none before an ancestor of it
        assert not any(repo.descendant_of(one, then) for then in listed[at + 1 :])
