"""``orange sync``: two clones that worked offline converge through a hub whose
``update`` hook replays every push; nothing is dropped and every task parses."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from orange.cli import fast, main
from orange.engine.forgery import verify_new
from orange.engine.replay import check_history
from orange.engine.trust import trusted_here
from orange.store import layout, listing
from orange.store.store import TaskStore
from orange.store.task import Task
from orange.sync import remote as git_remote
from tests.conftest import Cli, git, make_repo
from tests.sync.conftest import Clone

Clones = Callable[[int], list[Clone]]


def _every_task_parses(path: Path) -> list[Task]:
    store = TaskStore.open(path)
    tasks = listing.all_tasks(store)
    assert all(isinstance(task, Task) for task in tasks)
    return [store.get(task.id) for task in tasks]


def test_two_clones_that_worked_offline_converge(clones: Clones, hub: Path) -> None:
    a, b = clones(2)
    shared = a.create("shared task")
    a.ok("sync")
    b.ok("sync")
    a.ok("task", "edit", shared, "--section", "Notes", "--file", "-", stdin="from a\n")
    a.ok("task", "cancel", "--yes", shared)
    a_only = a.create("made on a")
    b.ok("task", "edit", shared, "--section", "Notes", "--file", "-", stdin="from b\n")
    b.ok("task", "update", shared, "--summary", "renamed on b")
    b_only = b.create("made on b")

    first = a.ok("sync", "--json").json()
    assert (first["outgoing"], first["merges"], first["pushed"]) == (
        sorted([a_only, shared]),
        [],
        True,
    )
    second = b.ok("sync", "--json").json()
    assert second["incoming"] == sorted([a_only, shared]) and len(second["merges"]) == 1
    assert list(second["conflicts"]) == [shared]
    assert a.ok("sync", "--json").json()["incoming"] == sorted([b_only, shared])

    assert a.tree() == b.tree() == git(hub, "rev-parse", f"{layout.TASKS_REF}^{{tree}}").strip()
    hub_commits = set(git(hub, "rev-list", layout.TASKS_REF).split())
    assert a.commits() | b.commits() <= hub_commits
    merged = {task.id: task for task in _every_task_parses(a.path)}
    assert set(merged) == {shared, a_only, b_only}
    task = merged[shared]
    assert (task.status, task.summary) == ("cancelled", "renamed on b")
    assert "from a" in task.body and "from b" in task.body
    assert "sync merge: section ## Notes edited on both sides" in task.str_field("attention")
    # every event of both sides is in the task's log, and the merge is the sync's
    log = [
        (h["actor"], h["event"]) for h in a.ok("task", "show", shared, "--json").json()["history"]
    ]
    assert log.count(("cli", "task.updated")) == 3 and ("sync", "sync.merge") in log
    tip = git(hub, "rev-parse", layout.TASKS_REF).strip()
    assert check_history(TaskStore.open(hub).pygit, tip, trusted=trusted_here) == []
    for clone in (a, b):  # this host's replay of what arrived finds nothing to restore
        clone.ok("task", "list")  # (under the clone's own home)
        verified = verify_new(TaskStore.open(clone.path), trusted=trusted_here, actor="cli")
        assert (verified.restored, verified.untrusted, verified.tip) == ([], [], tip)


def test_sync_prints_what_came_in_and_what_went_out(clones: Clones) -> None:
    a, b = clones(2)
    made = a.create("from a")
    assert a.ok("sync").out.splitlines() == [
        "sync with origin: 0 tasks in, 1 out, 0 conflicts",
        f"  out: {made}",
    ]
    assert b.ok("sync").out.splitlines() == [
        "sync with origin: 1 tasks in, 0 out, 0 conflicts (nothing to push)",
        f"  in:  {made}",
    ]


def test_no_remote_or_an_unreachable_one_is_a_one_line_error(
    clones: Clones, tmp_path: Path
) -> None:
    (a,) = clones(1)
    missing = a("sync", "upstream", "--json")
    assert missing.code == 1 and "no git remote 'upstream'" in missing.json()["error"]
    git(a.path, "remote", "add", "gone", str(tmp_path / "nowhere.git"))
    gone = a("sync", "gone")
    assert gone.code == 1 and "cannot reach remote 'gone'" in gone.err
    assert len(gone.err.strip().splitlines()) <= 2


def test_clone_and_project_add_bring_the_tasks_and_remove_takes_the_refspec_out(
    clones: Clones,
) -> None:
    (a,) = clones(1)
    made = a.create("before the clone")
    a.ok("sync")
    (b,) = clones(1)  # cloned after a pushed: project add fetched the tasks
    assert b.ok("task", "show", made, "--json").json()["summary"] == "before the clone"
    spec = "refs/orange/task*:refs/orange/remotes/origin/task*"
    fetch = git(b.path, "config", "--get-all", "remote.origin.fetch").split()
    assert spec in fetch and f"+{spec}" not in fetch
    assert git(b.path, "config", "--get-all", "remote.origin.push", check=False) == ""
    b.ok("project", "remove", "proj")
    assert spec not in git(b.path, "config", "--get-all", "remote.origin.fetch").split()


def test_behind_is_a_fast_forward_to_the_same_commit(clones: Clones) -> None:
    a, b = clones(2)
    a.create("one")
    a.ok("sync")
    b.ok("sync")
    a.create("two")
    a.ok("sync")
    result = b.ok("sync", "--json").json()
    assert (result["merges"], result["pushed"]) == ([], False)
    assert b.commits() == a.commits()


def test_a_push_that_lost_a_race_fetches_merges_and_pushes_again(
    clones: Clones, hub: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = clones(2)
    a.create("one")
    a.ok("sync")
    b.ok("sync")
    raced = a.create("pushed by a while b syncs")
    mine = b.create("made on b")
    fetches: list[str | None] = []
    real_fetch = git_remote.fetch

    def fetch_then_race(
        repo: pygit2.Repository, remote: str, timeout: float | None = None
    ) -> str | None:
        fetched = real_fetch(repo, remote, timeout)
        if not fetches:  # a teammate pushes between b's fetch and b's push
            git(a.path, "push", "-q", "origin", f"{layout.TASKS_REF}:{layout.TASKS_REF}")
        fetches.append(fetched)
        return fetched

    monkeypatch.setattr(git_remote, "fetch", fetch_then_race)
    result = b.ok("sync", "--json").json()
    assert len(fetches) == 2 and result["pushed"] and len(result["merges"]) == 1
    assert raced in result["incoming"] and mine in result["outgoing"]
    assert a.commits() | b.commits() <= set(git(hub, "rev-list", layout.TASKS_REF).split())


def test_two_histories_started_apart_merge(clones: Clones, hub: Path) -> None:
    a, b = clones(2)
    mine, theirs = a.create("made on a first"), b.create("made on b first")
    a.ok("sync")
    result = b.ok("sync", "--json").json()
    assert (result["incoming"], result["outgoing"], result["pushed"]) == ([mine], [theirs], True)
    a.ok("sync")
    assert a.tree() == b.tree()
    assert {t.id for t in _every_task_parses(a.path)} == {mine, theirs}
    tip = git(hub, "rev-parse", layout.TASKS_REF).strip()
    assert check_history(TaskStore.open(hub).pygit, tip, trusted=trusted_here) == []


def test_sync_setup_adds_the_refspec_to_a_project_added_before_its_remote(
    cli: Cli, repo: Path, hub: Path
) -> None:
    git(repo, "remote", "remove", "origin")
    cli.ok("project", "add", cwd=repo)  # no remote yet: no refspec
    git(repo, "remote", "add", "origin", str(hub))
    spec = "refs/orange/task*:refs/orange/remotes/origin/task*"
    assert spec not in git(repo, "config", "--get-all", "remote.origin.fetch").split()
    out = cli.ok("sync", "--setup", "--json", cwd=repo).json()
    assert out == {"remote": "origin", "refspec": spec}
    assert git(repo, "config", "--get-all", "remote.origin.fetch").split().count(spec) == 1
    cli.ok("sync", "--setup", cwd=repo)  # twice: still once
    assert git(repo, "config", "--get-all", "remote.origin.fetch").split().count(spec) == 1


def test_a_clone_in_a_folder_of_another_name_takes_the_tasks_project_name(
    clones: Clones, hub: Path, tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    (a,) = clones(1)
    made = a.create("shared")
    a.ok("sync")
    path = tmp_path / "my-other-checkout"
    git(tmp_path, "clone", "-q", str(hub), str(path))
    b = Clone(cli, monkeypatch, path, "laptop")
    added = b.ok("project", "add")  # no --name: the folder's name is not the tasks'
    assert "registered as 'proj', the name its shared tasks carry" in added.out
    assert [t["id"] for t in b.ok("task", "list", "--json").json()["tasks"]] == [made]
    assert [p["name"] for p in b.ok("project", "list", "--json").json()["projects"]] == ["proj"]


def test_the_sync_runs_no_hook_of_the_clone_and_the_hubs_hook_still_judges(
    clones: Clones, hub: Path
) -> None:
    """A clone's ``pre-push`` is for code and its ``reference-transaction`` would only
    restart Orange about its own move: the sync's git runs neither.  The hub's own
    ``update`` hook still replays what the sync pushes."""
    a, b = clones(2)
    hooks = b.path / ".git" / "hooks"
    ran = b.path.parent / "ran-hooks"
    for name in ("pre-push", "reference-transaction"):
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> '{ran}'\nexit 1\n")
        (hooks / name).chmod(0o755)
    made = b.create("made on b")
    assert b.ok("sync", "--json").json()["pushed"]
    assert not ran.exists()
    assert made in set(git(hub, "ls-tree", "-r", "--name-only", layout.TASKS_REF).split("/"))
    shared = a.create("shared")
    a.ok("sync")
    b.ok("sync")
    b.ok("task", "update", shared, "--summary", "from b")
    a.ok("task", "update", shared, "--summary", "from a")
    a.ok("sync")
    git(b.path, "-c", "core.hooksPath=/dev/null", "fetch", "-q", "origin")
    ours = git(b.path, "rev-parse", layout.TASKS_REF).strip()
    theirs = git(b.path, "rev-parse", "refs/orange/remotes/origin/tasks").strip()
    tree = git(b.path, "rev-parse", f"{ours}^{{tree}}").strip()  # not Orange's merge
    forged = git(b.path, "commit-tree", tree, "-p", ours, "-p", theirs, "-m", "merge").strip()
    git(b.path, "-c", "core.hooksPath=/dev/null", "update-ref", layout.TASKS_REF, forged)
    refused = b("sync")
    assert refused.code == 1
    assert f"task {shared}: merge commit differs from Orange's merge" in refused.err
    assert git(hub, "rev-parse", layout.TASKS_REF).strip() == theirs


@pytest.mark.parametrize(
    "args",
    [
        ["sync"],
        ["sync", "--json"],
        ["sync", "--setup"],
        ["sync", "nosuch"],
        ["sync", "--project", "proj", "origin"],
    ],
    ids=["plain", "json", "setup", "no-remote", "named"],
)
def test_sync_means_the_same_on_the_fast_path_and_through_typer(
    clones: Clones, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    (a,) = clones(1)
    a.create("one")
    a.ok("sync")
    assert fast.fast_command(args) is not None
    on_fast = a(*args)
    monkeypatch.setattr(main, "fast_command", lambda argv: None)
    through_typer = a(*args)
    assert (on_fast.code, on_fast.out, on_fast.err) == (
        through_typer.code,
        through_typer.out,
        through_typer.err,
    )


def test_a_plain_fetch_works_while_the_remote_has_no_tasks(tmp_path: Path, cli: Cli) -> None:
    """`project add` on a clone whose remote holds no tasks yet: the user's own
    `git fetch` (and Orange's fetches of branches) must not fail on the tasks refspec."""
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    repo = make_repo(tmp_path / "solo")
    git(repo, "remote", "add", "origin", str(hub))
    git(repo, "push", "-q", "origin", "main")
    cli.ok("project", "add", cwd=repo)
    result = subprocess.run(["git", "fetch", "origin"], cwd=repo, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
