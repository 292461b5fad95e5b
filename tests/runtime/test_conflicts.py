"""Conflicts predicted with ``git merge-tree`` (`orange.runtime.conflicts`): which
active branches would conflict with the branch they merge into and with each other,
on which files, in a real repository; the same answer as git's for every shape of
change the shortcut passes over; a forged branch name never reaches git."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from orange.projects import Project
from orange.runtime.conflicts import Clash, clashes
from orange.store.store import TaskStore
from orange.store.task import Task
from tests.conftest import git, make_repo


def task(task_id: str, branch: str, **extra: str) -> Task:
    return Task(fields={"id": task_id, "branch": branch, "project": "proj", **extra}, body="")


def on_branch(repo: Path, branch: str, files: dict[str, str | None], start: str = "main") -> None:
    """Commit ``files`` (None deletes) on ``branch``, made from ``start`` if new."""
    exists = git(repo, "branch", "--list", branch)
    git(repo, "checkout", "-q", *([branch] if exists else ["-b", branch, start]))
    for name, text in files.items():
        path = repo / name
        if text is None:
            git(repo, "rm", "-q", "-r", name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"work on {branch}")
    git(repo, "checkout", "-q", "main")


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "proj")
    on_branch(repo, "main", {"shared.py": "one\ntwo\nthree\n", "lib/util.py": "u\n"})
    return repo


PROJECT = Project("proj", "", "main")


def scan(repo: Path, *tasks: Task) -> dict[str, tuple[Clash, ...]]:
    return clashes(TaskStore.open(repo), PROJECT._replace(path=str(repo)), tasks)


def test_two_branches_editing_one_file_conflict_with_each_other(proj: Path) -> None:
    on_branch(proj, "a", {"shared.py": "one\nTWO by a\nthree\n"})
    on_branch(proj, "b", {"shared.py": "one\nTWO by b\nthree\n", "b.txt": "b\n"})
    on_branch(proj, "c", {"c.txt": "c\n"})  # touches nothing of theirs
    found = scan(proj, task("aaaa0001", "a"), task("bbbb0002", "b"), task("cccc0003", "c"))
    assert found == {
        "aaaa0001": (Clash("bbbb0002", "b", ("shared.py",)),),
        "bbbb0002": (Clash("aaaa0001", "a", ("shared.py",)),),
    }


def test_a_branch_behind_a_moved_default_branch_conflicts_with_it(proj: Path) -> None:
    on_branch(proj, "a", {"shared.py": "one\nTWO by a\nthree\n", "lib/util.py": "a\n"})
    on_branch(proj, "main", {"shared.py": "one\nTWO on main\nthree\n"})
    assert scan(proj, task("aaaa0001", "a")) == {"aaaa0001": (Clash("", "main", ("shared.py",)),)}
    # Against its own base when it has one.
    git(proj, "branch", "release", "main~1")
    assert scan(proj, task("aaaa0001", "a", base="release")) == {}


def test_the_scan_follows_a_branch_that_moves(proj: Path) -> None:
    on_branch(proj, "a", {"shared.py": "one\nTWO by a\nthree\n"})
    on_branch(proj, "b", {"other.py": "b\n"})
    tasks = (task("aaaa0001", "a"), task("bbbb0002", "b"))
    assert scan(proj, *tasks) == {}
    on_branch(proj, "b", {"shared.py": "one\nTWO by b\nthree\n"})
    assert scan(proj, *tasks)["aaaa0001"] == (Clash("bbbb0002", "b", ("shared.py",)),)
    on_branch(proj, "b", {"shared.py": "one\nTWO by a\nthree\n"})  # now the same change
    assert scan(proj, *tasks) == {}
    assert scan(proj, *tasks) == {}  # asked again, nothing moved


def test_branches_without_commits_of_their_own_or_here_are_left_out(proj: Path) -> None:
    git(proj, "branch", "empty", "main")
    on_branch(proj, "main", {"shared.py": "one\nTWO on main\nthree\n"})
    git(proj, "branch", "merged", "main")
    found = scan(proj, task("eeee0001", "empty"), task("ffff0002", "merged"),
                 task("9999aaaa", "not-here"))  # fmt: skip
    assert found == {}


FORGED = ["--output=/tmp/x", "+main", "HEAD", "@", "refs/heads/a", "a..b"]


@pytest.mark.parametrize("branch", FORGED)
def test_a_forged_branch_name_is_passed_over(proj: Path, branch: str) -> None:
    on_branch(proj, "a", {"shared.py": "one\nTWO by a\nthree\n"})
    on_branch(proj, "b", {"shared.py": "one\nTWO by b\nthree\n"})
    found = scan(proj, task("aaaa0001", "a"), task("bbbb0002", "b"), task("dddd0004", branch))
    assert set(found) == {"aaaa0001", "bbbb0002"}
    found = scan(proj, task("aaaa0001", "a", base=branch))
    assert found == {}


class Shape(NamedTuple):
    id: str
    ours: dict[str, str | None]
    theirs: dict[str, str | None]


# Shapes of change the shortcut (no common path, no deletion) reasons about; each
# compared with what `git merge-tree` itself says of the two branches.
SHAPES = [
    Shape("disjoint-files", {"x.txt": "x\n"}, {"y.txt": "y\n"}),
    Shape("same-change", {"shared.py": "same\n"}, {"shared.py": "same\n"}),
    Shape("file-where-folder", {"lib/util.py": None, "lib": "a file\n"}, {"lib/new.py": "n\n"}),
    Shape("added-file-vs-folder", {"new": "a file\n"}, {"new/inner.txt": "deep\n"}),
    Shape("delete-vs-modify", {"shared.py": None}, {"shared.py": "one\nchanged\nthree\n"}),
    Shape(
        "rename-vs-modify",
        {"shared.py": None, "moved.py": "one\ntwo\nthree\n"},
        {"shared.py": "one\ntwo\nthree\nfour\n"},
    ),
    Shape(
        "rename-both",
        {"shared.py": None, "r1.py": "one\ntwo\nthree\n"},
        {"shared.py": None, "r2.py": "one\ntwo\nthree\n"},
    ),
    Shape("add-add", {"n.txt": "mine\n"}, {"n.txt": "theirs\n"}),
    Shape("folder-rename", {"lib/util.py": None, "lib2/util.py": "u\n"}, {"lib/extra.py": "e\n"}),
    Shape("edits-apart", {"shared.py": "ONE\ntwo\nthree\n"}, {"lib/util.py": "v\n"}),
]


@pytest.mark.parametrize("shape", SHAPES, ids=[s.id for s in SHAPES])
def test_the_answer_is_gits(proj: Path, shape: Shape) -> None:
    on_branch(proj, "ours", shape.ours)
    on_branch(proj, "theirs", shape.theirs)
    merged = git(proj, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages",
                 "ours", "theirs", check=False)  # fmt: skip
    # git names a file it moved aside for a folder ``NAME~BRANCH``: Orange says NAME.
    expected = tuple(sorted({p.split("~")[0] for p in merged.split("\0")[1:] if p}))
    found = scan(proj, task("aaaa0001", "ours"), task("bbbb0002", "theirs"))
    got = found.get("aaaa0001", ())
    assert [c.files for c in got if c.other] == ([expected] if expected else [])


def test_a_scan_sees_a_branch_move_while_the_tasks_ref_stands_still(proj: Path) -> None:
    from orange.engine.catalog import load_named
    from orange.engine.tasks import create_task
    from orange.runtime.conflicts import scan as scan_project

    store = TaskStore.open(proj)
    project = PROJECT._replace(path=str(proj))
    on_branch(proj, "a", {"shared.py": "one\nTWO by a\nthree\n"})
    on_branch(proj, "b", {"other.py": "b\n"})
    made = [
        create_task(store, project, load_named("default"), summary=b, branch=b, park=True).id
        for b in ("a", "b")
    ]
    assert scan_project(store, store.snapshot(), project) == {}
    on_branch(proj, "b", {"shared.py": "one\nTWO by b\nthree\n"})  # the tasks ref stays
    assert set(scan_project(store, store.snapshot(), project)) == set(made)
    on_branch(proj, "main", {"shared.py": "one\nTWO by a\nthree\n"})  # a's work lands
    found = scan_project(store, store.snapshot(), project)
    assert [c.other for c in found[made[1]]] == ["", made[0]]


def test_a_file_name_with_control_characters_is_shown_escaped(proj: Path) -> None:
    name = "evil\x1b[31m.txt"
    on_branch(proj, "a", {name: "a\n"})
    on_branch(proj, "b", {name: "b\n"})
    found = scan(proj, task("aaaa0001", "a"), task("bbbb0002", "b"))
    clash = found["aaaa0001"][0]
    assert clash.files == (name,)  # as git names it, for --json
    assert clash.text() == "task bbbb0002 (b) on evil\\x1b[31m.txt"


def test_an_unreadable_answer_file_is_asked_again(proj: Path) -> None:
    on_branch(proj, "a", {"shared.py": "one\nTWO by a\nthree\n"})
    on_branch(proj, "b", {"shared.py": "one\nTWO by b\nthree\n"})
    tasks = (task("aaaa0001", "a"), task("bbbb0002", "b"))
    expected = scan(proj, *tasks)
    kept = TaskStore.open(proj).repo.orange_dir() / "conflicts.json"
    for damage in ('{"version": 1, "key": [["x"]], "result": 3}', "\x00not json", "[]"):
        kept.write_text(damage)
        assert scan(proj, *tasks) == expected


def test_a_teammates_branch_is_read_from_the_sync_remotes_copy(proj: Path) -> None:
    """A task whose branch this clone has only as the sync remote's copy (a teammate's,
    fetched) is scanned from ``refs/remotes/<remote>/<branch>``, as fresh as the last
    fetch; a local branch of the same name wins; without the remote, it is left out."""
    on_branch(proj, "a", {"shared.py": "one\nTWO by a\nthree\n"})
    on_branch(proj, "theirs", {"shared.py": "one\nTWO by them\nthree\n"})
    fetched = git(proj, "rev-parse", "theirs").strip()
    git(proj, "branch", "-q", "-D", "theirs")
    git(proj, "update-ref", "refs/remotes/origin/theirs", fetched)  # as a fetch leaves it
    mine, theirs = task("aaaa0001", "a"), task("bbbb0002", "theirs")
    assert scan(proj, mine, theirs) == {}  # no remote named origin: not read

    git(proj, "remote", "add", "origin", str(proj.parent / "hub.git"))
    found = scan(proj, mine, theirs)
    assert found["aaaa0001"] == (Clash("bbbb0002", "origin/theirs", ("shared.py",)),)
    assert found["bbbb0002"] == (Clash("aaaa0001", "a", ("shared.py",)),)

    # The next fetch brings their fix: the scan follows the remote's copy.
    on_branch(proj, "fixed", {"other.py": "x\n"})
    git(proj, "update-ref", "refs/remotes/origin/theirs", git(proj, "rev-parse", "fixed").strip())
    assert scan(proj, mine, theirs) == {}

    # A local branch of that name is what a merge here takes: it wins.
    git(proj, "branch", "-q", "theirs", fetched)
    assert scan(proj, mine, theirs)["aaaa0001"] == (Clash("bbbb0002", "theirs", ("shared.py",)),)
