"""The runtime commands: merge, create-pr, the worktree pool, acquire, rename, peek,
restore and effort (issue "The runtime").

Agents are HOLD agents (they record their argv, print a marker and sleep); statuses
are driven with `task edit` + `task update --status`, or a task starts in
``reviewing``.  ``gh`` is the fake in ``fakes/``; ``origin`` is a bare repository.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from orange.home import orange_home
from orange.store import layout
from orange.store.events import Change
from orange.store.store import Snapshot
from tests.conftest import git, run_orange
from tests.e2e.conftest import World, commit_behind_engine, wait_for

FAKES = Path(__file__).parent / "fakes"
PLAN = "APPROACH: go\nTOUCHING: x\n"
HANDOFF = "DONE: the work\nREMAINING: nothing\nDECISIONS: none\nUNCERTAIN: none\n"

# A HOLD agent: appends its argv to OUT/<task>.jsonl, prints lines and a marker, sleeps.
# Its binary is a script, so a harness's effort flag after the binary is harmless.
HOLD_SCRIPT = """#!__PYTHON__
import json, os, sys, time
task = os.environ.get("ORANGE_TASK_ID", "unknown")
with open(os.path.join(__OUT__, task + ".jsonl"), "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
for n in range(30):
    print("hold line %d" % n)
print("HOLD-MARKER " + task, flush=True)
time.sleep(600)
"""


# -- fixtures and helpers -------------------------------------------------------------


@dataclass
class Hold:
    script: Path
    out: Path

    def launches(self, task_id: str) -> list[list[str]]:
        log = self.out / f"{task_id}.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def argv(self, task_id: str) -> list[str]:
        return wait_for(lambda: self.launches(task_id), what=f"agent of {task_id}")[0]


@pytest.fixture
def hold(world: World, tmp_path: Path) -> Hold:
    out = tmp_path / "hold-out"
    out.mkdir()
    script = tmp_path / "hold-agent"
    script.write_text(
        HOLD_SCRIPT.replace("__PYTHON__", sys.executable).replace("__OUT__", repr(str(out)))
    )
    script.chmod(0o755)
    world.set_harness("hold", [str(script), "{prompt}"])
    return Hold(script, out)


@dataclass
class Gh:
    folder: Path

    def set_state(self, state: str) -> None:
        (self.folder / "state").write_text(state + "\n")

    def calls(self) -> list[list[str]]:
        log = self.folder / "calls.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def gh(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Gh:
    bin_dir = tmp_path / "gh-bin"
    bin_dir.mkdir()
    target = bin_dir / "gh"
    shutil.copy(FAKES / "gh", target)
    target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    folder = tmp_path / "gh-state"
    folder.mkdir()
    monkeypatch.setenv("FAKE_GH_DIR", str(folder))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return Gh(folder)


def add_origin(world: World, tmp_path: Path) -> Path:
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(world.repo, "remote", "add", "origin", str(bare))
    git(world.repo, "push", "-q", "-u", "origin", "main")
    return bare


def rev(repo: Path, ref: str) -> str:
    return git(repo, "rev-parse", "--verify", "--quiet", ref, check=False).strip()


def commit_on(repo: Path, branch: str, name: str, text: str, start: str = "main") -> str:
    """Commit ``name`` on ``branch`` (created from ``start``), back to where HEAD was."""
    current = git(repo, "symbolic-ref", "--short", "HEAD").strip()
    if current != branch:
        if rev(repo, f"refs/heads/{branch}"):
            git(repo, "checkout", "-q", branch)
        else:
            git(repo, "checkout", "-q", "-b", branch, start)
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
    sha = rev(repo, "HEAD")
    if current != branch:
        git(repo, "checkout", "-q", current)
    return sha


def parents(repo: Path, ref: str) -> list[str]:
    return git(repo, "rev-list", "--parents", "-n", "1", ref).split()[1:]


def worktree_of(world: World, task_id: str) -> Path:
    name = world.task(task_id).str_field("workspace")
    assert name, f"task {task_id} holds no workspace"
    return orange_home() / "workspaces" / name


def tasks_tip(world: World) -> str:
    return rev(world.repo, layout.TASKS_REF)


def to_reviewing(world: World, task_id: str) -> None:
    """planning -> working -> agent-review -> reviewing, as the agents would."""
    world.ok("task", "edit", task_id, "--section", "Plan", "--file", "-", stdin=PLAN)
    world.ok("task", "update", task_id, "--status", "working")
    world.ok("task", "edit", task_id, "--section", "Handoff", "--file", "-", stdin=HANDOFF)
    world.ok("task", "update", task_id, "--status", "agent-review")
    world.ok("task", "edit", task_id, "--section", "Review", "--file", "-", stdin="Verdict: PASS\n")
    world.ok("task", "update", task_id, "--status", "reviewing")


def reviewing_task(world: World, branch: str) -> str:
    """A task created straight in reviewing (no worktree, no agent)."""
    return world.create(branch, f"Summary of {branch}", "--status", "reviewing")


def forge_status(world: World, task_id: str, status: str) -> None:
    """Write a status directly, bypassing the engine (as a crash or a bug might), taken
    as verified on this host (else the monitor restores it)."""

    def compute(snap: Snapshot) -> Change:
        task = snap.task(task_id)
        assert task is not None
        forged = task.with_fields(status=status)
        return Change(
            task_id=task_id,
            event="task.updated",
            subject=f"task {task_id}: forged {status}",
            writes={task.path: forged.render().encode()},
        )

    commit_behind_engine(world.repo, compute)


# -- merge ----------------------------------------------------------------------------


def test_merge_strategies_update_the_clean_main_checkout(world: World) -> None:
    repo = world.repo
    # Default, fast-forward possible: main moves to the branch tip, no merge commit.
    tip = commit_on(repo, "ff-able", "ff.txt", "ff\n")
    task = reviewing_task(world, "ff-able")
    world.ok("task", "merge", task)
    assert rev(repo, "main") == tip and world.status(task) == "done"
    assert (repo / "ff.txt").read_text() == "ff\n"  # the checkout itself was updated
    assert git(repo, "status", "--porcelain") == ""

    # Default, diverged: a merge commit whose parents are old main and the branch.
    tip = commit_on(repo, "diverged", "div.txt", "div\n")
    old_main = commit_on(repo, "main", "main-only.txt", "main\n")
    task = reviewing_task(world, "diverged")
    world.ok("task", "merge", task)
    assert parents(repo, "main") == [old_main, tip]
    assert (repo / "div.txt").exists() and world.status(task) == "done"

    # --strategy ff on diverged branches: refused, nothing changed.
    commit_on(repo, "ff-only", "ffo.txt", "ffo\n")
    before = commit_on(repo, "main", "main-2.txt", "main 2\n")
    task = reviewing_task(world, "ff-only")
    tip_of_tasks = tasks_tip(world)
    refused = world.orange("task", "merge", task, "--strategy", "ff")
    assert refused.code == 1 and "diverged" in refused.err
    assert rev(repo, "main") == before and world.status(task) == "reviewing"
    assert tasks_tip(world) == tip_of_tasks and not (repo / "ffo.txt").exists()

    # --strategy merge when a fast-forward was possible: still a merge commit.
    tip = commit_on(repo, "always-merge", "am.txt", "am\n")
    task = reviewing_task(world, "always-merge")
    world.ok("task", "merge", task, "--strategy", "merge")
    assert parents(repo, "main") == [before, tip]
    assert world.status(task) == "done"


def test_merge_refuses_a_main_checkout_with_tracked_changes(world: World) -> None:
    repo = world.repo
    commit_on(repo, "feature", "f.txt", "f\n")
    task = reviewing_task(world, "feature")
    before = rev(repo, "main")
    (repo / "README.md").write_text("# local edits in progress\n")
    refused = world.orange("task", "merge", task)
    assert refused.code == 1
    assert "uncommitted changes" in refused.err and str(repo) in refused.err
    assert rev(repo, "main") == before and world.status(task) == "reviewing"
    assert (repo / "README.md").read_text() == "# local edits in progress\n"
    # Untracked files are no reason to refuse; once the edit is gone, it merges.
    git(repo, "checkout", "--", "README.md")
    (repo / "notes.txt").write_text("untracked\n")
    world.ok("task", "merge", task)
    assert rev(repo, "main") == rev(repo, "feature") and world.status(task) == "done"


def test_merge_without_a_checkout_of_the_default_branch(world: World) -> None:
    repo = world.repo
    git(repo, "checkout", "-q", "-b", "elsewhere")
    # Fast-forward through update-ref: the checkout on `elsewhere` is untouched.
    tip = commit_on(repo, "ff-able", "ff.txt", "ff\n")
    task = reviewing_task(world, "ff-able")
    world.ok("task", "merge", task)
    assert rev(repo, "main") == tip and world.status(task) == "done"
    assert git(repo, "symbolic-ref", "--short", "HEAD").strip() == "elsewhere"
    assert not (repo / "ff.txt").exists() and git(repo, "status", "--porcelain") == ""

    # A merge commit through merge-tree.
    tip = commit_on(repo, "side", "side.txt", "side\n", start="main~1")
    old = rev(repo, "main")
    task = reviewing_task(world, "side")
    world.ok("task", "merge", task)
    assert parents(repo, "main") == [old, tip]
    assert git(repo, "show", "main:side.txt") == "side\n"
    assert git(repo, "show", "main:ff.txt") == "ff\n"
    assert not (repo / "side.txt").exists()

    # A conflict: refused, main unchanged.
    commit_on(repo, "clash-a", "same.txt", "a\n")
    commit_on(repo, "clash-b", "same.txt", "b\n")
    first = reviewing_task(world, "clash-a")
    world.ok("task", "merge", first)
    second = reviewing_task(world, "clash-b")
    before = rev(repo, "main")
    refused = world.orange("task", "merge", second, "--strategy", "merge")
    # Predicted before any merge is tried (issue 29): the files are named.
    assert refused.code == 1 and f"task {second} would conflict with main on same.txt" in (
        refused.err
    )
    assert rev(repo, "main") == before and world.status(second) == "reviewing"


def test_merge_follows_the_pull_request_and_pushes(world: World, tmp_path: Path, gh: Gh) -> None:
    repo = world.repo
    bare = add_origin(world, tmp_path)
    tip = commit_on(repo, "via-pr", "pr.txt", "pr\n")
    task = reviewing_task(world, "via-pr")
    world.ok("task", "edit", task, "--section", "Handoff", "--file", "-", stdin=HANDOFF)
    world.ok("task", "create-pr", task)
    assert rev(bare, "refs/heads/via-pr") == tip
    url = json.loads(world.ok("task", "show", task, "--json").out)["pr_url"]
    assert url == "https://github.com/example/proj/pull/7"
    main_before = rev(repo, "main")

    gh.set_state("OPEN")
    refused = world.orange("task", "merge", task)
    assert refused.code == 1 and "open" in refused.err and "--local" in refused.err
    assert world.status(task) == "reviewing" and rev(repo, "main") == main_before
    assert ["pr", "view", url, "--json", "state", "--jq", ".state"] in gh.calls()

    gh.set_state("CLOSED")
    refused = world.orange("task", "merge", task)
    assert refused.code == 1 and "closed" in refused.err
    assert world.status(task) == "reviewing" and rev(repo, "main") == main_before

    # --local merges here even though the PR is open, pushes main, deletes the branch.
    gh.set_state("OPEN")
    world.ok("task", "merge", task, "--local")
    assert world.status(task) == "done"
    assert rev(repo, "main") == tip and rev(bare, "refs/heads/main") == tip
    assert rev(bare, "refs/heads/via-pr") == ""

    # A PR merged on GitHub: no local merge at all; the remote branch goes.
    other = commit_on(repo, "merged-there", "there.txt", "there\n")
    task = reviewing_task(world, "merged-there")
    world.ok("task", "create-pr", task)
    assert rev(bare, "refs/heads/merged-there") == other
    gh.set_state("MERGED")
    result = world.ok("task", "merge", task)
    assert "merged on GitHub" in result.out
    assert world.status(task) == "done"
    assert rev(repo, "main") == tip and rev(bare, "refs/heads/main") == tip
    assert rev(bare, "refs/heads/merged-there") == ""


def test_merge_pushes_main_to_origin_without_a_pr(world: World, tmp_path: Path) -> None:
    repo = world.repo
    bare = add_origin(world, tmp_path)
    tip = commit_on(repo, "pushed", "p.txt", "p\n")
    git(repo, "push", "-q", "origin", "pushed")
    task = reviewing_task(world, "pushed")
    world.ok("task", "merge", task)
    assert rev(bare, "refs/heads/main") == tip
    assert rev(bare, "refs/heads/pushed") == ""  # delete_remote_branch
    assert world.status(task) == "done"


def test_merge_with_uncommitted_work_in_the_worktree(world: World, hold: Hold) -> None:
    task = world.create("in-tree", "Work in a worktree", "--harness", "hold")
    worktree = worktree_of(world, task)
    to_reviewing(world, task)
    (worktree / "done.txt").write_text("committed\n")
    git(worktree, "add", "done.txt")
    git(worktree, "commit", "-q", "-m", "the work")
    tip = rev(worktree, "HEAD")
    (worktree / "scratch.txt").write_text("not committed\n")
    main_before = rev(world.repo, "main")
    refused = world.orange("task", "merge", task)
    assert refused.code == 1 and "uncommitted change" in refused.err and "--force" in refused.err
    assert rev(world.repo, "main") == main_before and world.status(task) == "reviewing"
    assert (worktree / "scratch.txt").exists()

    forced = world.ok("task", "merge", task, "--force")
    assert world.status(task) == "done"
    assert rev(world.repo, "main") == tip
    snap = f"refs/orange/snapshots/{task}/1"
    assert snap in forced.out
    assert git(world.repo, "show", f"{snap}:scratch.txt") == "not committed\n"
    assert not (worktree / "scratch.txt").exists()  # released and reset


# -- create-pr -----------------------------------------------------------------------


def test_create_pr_pushes_and_opens_with_summary_and_handoff(
    world: World, tmp_path: Path, gh: Gh
) -> None:
    bare = add_origin(world, tmp_path)
    tip = commit_on(world.repo, "pr-branch", "x.txt", "x\n")
    task = world.create("pr-branch", "Make the widget blue", "--status", "reviewing")
    world.ok("task", "edit", task, "--section", "Handoff", "--file", "-", stdin=HANDOFF)
    result = world.ok("task", "create-pr", task)
    assert "https://github.com/example/proj/pull/7" in result.out
    assert rev(bare, "refs/heads/pr-branch") == tip
    create = [c for c in gh.calls() if c[:2] == ["pr", "create"]]
    assert len(create) == 1
    args = create[0]
    assert args[args.index("--title") + 1] == "Make the widget blue"
    assert args[args.index("--body") + 1].strip() == HANDOFF.strip()
    assert args[args.index("--head") + 1] == "pr-branch"
    assert args[args.index("--base") + 1] == "main"
    shown = json.loads(world.ok("task", "show", task, "--json").out)
    assert shown["pr_url"] == "https://github.com/example/proj/pull/7"


def test_create_pr_targets_the_tasks_base(world: World, tmp_path: Path, gh: Gh) -> None:
    add_origin(world, tmp_path)
    commit_on(world.repo, "release", "RELEASE", "1.0\n")
    git(world.repo, "push", "-q", "origin", "release")
    commit_on(world.repo, "hotfix", "fix.txt", "fixed\n", start="release")
    task = world.create("hotfix", "Fix the release", "--status", "reviewing", "--base", "release")
    world.ok("task", "create-pr", task)
    (args,) = [c for c in gh.calls() if c[:2] == ["pr", "create"]]
    assert args[args.index("--base") + 1] == "release"


def test_create_pr_without_gh_or_without_a_remote(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commit_on(world.repo, "no-pr", "x.txt", "x\n")
    task = world.create("no-pr", "No PR possible", "--status", "reviewing")

    # No remote (gh present): names origin; gh never called.
    bin_dir = tmp_path / "gh-bin"
    bin_dir.mkdir()
    shutil.copy(FAKES / "gh", bin_dir / "gh")
    (bin_dir / "gh").chmod(0o755)
    folder = tmp_path / "gh-state"
    folder.mkdir()
    monkeypatch.setenv("FAKE_GH_DIR", str(folder))
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{path}")
    tip = tasks_tip(world)
    result = world.orange("task", "create-pr", task)
    assert result.code == 1 and "origin" in result.err and "Traceback" not in result.err
    assert tasks_tip(world) == tip and not (folder / "calls.jsonl").exists()

    # A remote but no gh on PATH: names gh; nothing pushed, nothing written.
    bare = add_origin(world, tmp_path)
    no_gh = [d for d in path.split(os.pathsep) if d and not (Path(d) / "gh").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(no_gh))
    result = world.orange("task", "create-pr", task)
    assert result.code == 1 and "`gh`" in result.err and "Traceback" not in result.err
    assert tasks_tip(world) == tip and rev(bare, "refs/heads/no-pr") == ""
    assert world.task(task).str_field("pr_url") == ""


# -- the pool -------------------------------------------------------------------------


def test_workspace_init_list_and_gc(world: World, hold: Hold) -> None:
    init = world.ok("workspace", "init")
    paths = [orange_home() / "workspaces" / f"proj--{n}" for n in (1, 2)]
    assert all(str(p) in init.out and (p / ".git").exists() for p in paths)
    assert "exist" in world.ok("workspace", "init").out

    first = world.create("first", "First", "--harness", "hold")
    second = world.create("second", "Second", "--harness", "hold")
    rows = {
        r["name"]: r for r in json.loads(world.ok("workspace", "list", "--json").out)["workspaces"]
    }
    assert rows["proj--1"]["task"] == first and rows["proj--1"]["branch"] == "first"
    assert rows["proj--2"]["task"] == second and rows["proj--2"]["branch"] == "second"
    assert f"proj--1\ttask {first} (first)" in world.ok("workspace", "list").out
    assert "nothing to clean" in world.ok("workspace", "gc").out  # both held

    # A task that ended but still names its workspace: gc releases it.
    forge_status(world, first, "cancelled")
    assert "\tfree" in world.ok("workspace", "list").out
    gc = world.ok("workspace", "gc")
    assert "released proj--1" in gc.out
    assert git(paths[0], "symbolic-ref", "-q", "HEAD", check=False) == ""  # detached
    assert not (paths[0] / "TASK.md").exists()

    # A deleted task whose worktree has unsaved work: kept, then saved with --force.
    (paths[1] / "unsaved.txt").write_text("precious\n")
    forge_status(world, second, "cancelled")
    world.ok("task", "delete", second, "--yes")
    kept = world.ok("workspace", "gc")
    assert "kept proj--2" in kept.out and "uncommitted" in kept.out and "--force" in kept.out
    assert (paths[1] / "unsaved.txt").exists()
    forced = world.ok("workspace", "gc", "--force")
    snap = f"refs/orange/snapshots/{second}/1"
    assert "released proj--2" in forced.out and snap in forced.out
    assert git(world.repo, "show", f"{snap}:unsaved.txt") == "precious\n"
    assert not (paths[1] / "unsaved.txt").exists()
    listed = json.loads(world.ok("workspace", "list", "--json").out)["workspaces"]
    assert [r["task"] for r in listed] == [None, None]


# -- acquire ---------------------------------------------------------------------------


def test_acquire_local_remote_and_new_branches(world: World, tmp_path: Path, hold: Hold) -> None:
    repo = world.repo
    bare = add_origin(world, tmp_path)
    world.ok("project", "update", "proj", "--pool-size", "3")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(bare), str(other))

    # A branch that exists locally is checked out as it is.
    local_tip = commit_on(repo, "local-br", "l.txt", "l\n")
    task = world.create("local-br", "Local", "--harness", "hold")
    tree = worktree_of(world, task)
    assert git(tree, "symbolic-ref", "--short", "HEAD").strip() == "local-br"
    assert rev(tree, "HEAD") == local_tip

    # A branch only on the remote: checked out tracking it.
    remote_tip = commit_on(other, "remote-br", "r.txt", "r\n")
    git(other, "push", "-q", "origin", "remote-br")
    assert rev(repo, "refs/heads/remote-br") == ""
    task = world.create("remote-br", "Remote", "--harness", "hold")
    tree = worktree_of(world, task)
    assert rev(tree, "HEAD") == remote_tip
    upstream = git(tree, "rev-parse", "--abbrev-ref", "remote-br@{upstream}").strip()
    assert upstream == "origin/remote-br"

    # A new branch starts from the up-to-date default branch (someone else's push).
    pushed = commit_on(other, "main", "theirs.txt", "theirs\n")
    git(other, "push", "-q", "origin", "main")
    task = world.create("fresh-br", "Fresh", "--harness", "hold")
    tree = worktree_of(world, task)
    assert git(tree, "symbolic-ref", "--short", "HEAD").strip() == "fresh-br"
    assert rev(tree, "HEAD") == pushed and (tree / "theirs.txt").exists()


def test_acquire_refuses_a_branch_checked_out_elsewhere(world: World, hold: Hold) -> None:
    git(world.repo, "checkout", "-q", "-b", "busy")
    result = world.orange("task", "create", "busy", "Busy branch", "--harness", "hold", "--json")
    assert result.code == 1
    assert "checked out in" in result.err and str(world.repo) in result.err
    task = json.loads(result.out)
    assert task["status"] == "pending" and not task.get("workspace")
    assert world.status(task["id"]) == "pending"


def test_a_tracked_task_md_is_never_overwritten(world: World, hold: Hold) -> None:
    own = "# The project's own TASK.md\n\nnot Orange's\n"
    (world.repo / "TASK.md").write_text(own)
    git(world.repo, "add", "TASK.md")
    # As if tracked before Orange came (its pre-commit hook refuses a new TASK.md).
    git(world.repo, "commit", "-q", "--no-verify", "-m", "track TASK.md")
    task = world.create("tracked", "Respect the file", "--harness", "hold")
    tree = worktree_of(world, task)
    assert (tree / "TASK.md").read_text() == own
    copy = tree / "ORANGE-TASK.md"
    assert "Respect the file" in copy.read_text()
    prompt = hold.argv(task)[-1]
    assert "ORANGE-TASK.md" in prompt and "tracks its own TASK.md" in prompt
    world.ok("task", "edit", task, "--section", "Notes", "--file", "-", stdin="a note\n")
    assert (tree / "TASK.md").read_text() == own and "a note" in copy.read_text()
    assert git(tree, "status", "--porcelain") == ""
    world.ok("task", "cancel", task, "--yes")
    assert (tree / "TASK.md").read_text() == own and not copy.exists()


# -- rename, peek, restore, effort ---------------------------------------------------------


def test_update_branch_renames_live_worktree_and_session_then_adopts(
    world: World, hold: Hold
) -> None:
    task = world.create("old-name", "Rename me", "--harness", "hold")
    tree = worktree_of(world, task)
    hold.argv(task)
    assert "proj/old-name" in world.tmux("list-sessions", "-F", "#{session_name}")

    world.ok("task", "update", task, "--branch", "new-name")
    branches = git(tree, "branch", "--list", "--format=%(refname:short)").split()
    assert "new-name" in branches and "old-name" not in branches
    assert git(tree, "symbolic-ref", "--short", "HEAD").strip() == "new-name"
    sessions = world.tmux("list-sessions", "-F", "#{session_name}").split()
    assert "proj/new-name" in sessions and "proj/old-name" not in sessions
    renamed = world.task(task)
    assert renamed.branch == "new-name" and renamed.str_field("tmux_session") == "proj/new-name"

    # The agent checks out a branch of its own, then adopts it.
    git(tree, "checkout", "-q", "-b", "adopted")
    result = run_orange("task", "update", "--branch", cwd=tree, env={"ORANGE_TASK_ID": task})
    assert result.code == 0, result.err
    adopted = world.task(task)
    assert adopted.branch == "adopted" and adopted.str_field("tmux_session") == "proj/adopted"
    sessions = world.tmux("list-sessions", "-F", "#{session_name}").split()
    assert "proj/adopted" in sessions and "proj/new-name" not in sessions


def test_peek_prints_the_agents_recent_output(world: World, hold: Hold) -> None:
    task = world.create("peeked", "Peek at me", "--harness", "hold")
    marker = f"HOLD-MARKER {task}"

    def shown() -> bool:  # the pane, read from tmux: a poll is no `orange` each
        return marker in world.tmux(
            "capture-pane", "-p", "-t", f"={world.task(task).str_field('tmux_session')}:=worker"
        )

    wait_for(shown, what="the marker in the agent's pane")
    out = world.ok("task", "peek", task, "--lines", "3").out
    lines = out.rstrip("\n").splitlines()
    assert len(lines) <= 3 and lines[-1] == marker
    assert "hold line 29" in out and "hold line 5\n" not in out
    more = world.ok("task", "peek", task, "--lines", "10").out
    assert "hold line 22" in more and marker in more


def test_restore_picks_the_numbered_snapshot(world: World) -> None:
    from orange.store.repo import open_repo
    from orange.store.snapshots import add_snapshot

    repo = world.repo
    task = world.create("snapped", "Snapshots", "--no-spawn")
    one = commit_on(repo, "tmp-1", "work.txt", "version 1\n")
    two = commit_on(repo, "tmp-2", "work.txt", "version 2\n")
    add_snapshot(open_repo(repo), task, one, "first")
    add_snapshot(open_repo(repo), task, two, "second")

    first = world.ok("task", "restore", task, "--snapshot", "1")
    assert f"refs/orange/snapshots/{task}/1" in first.out and "on branch snapped" in first.out
    assert git(repo, "show", "snapped:work.txt") == "version 1\n"
    second = world.ok("task", "restore", task, "--snapshot", "2", "--json")
    restored = json.loads(second.out)
    assert restored["snapshot"] == f"refs/orange/snapshots/{task}/2"
    assert git(repo, "show", f"{restored['branch']}:work.txt") == "version 2\n"
    assert rev(repo, "snapped") == one  # the task's branch was not moved

    unknown = world.orange("task", "restore", task, "--snapshot", "5")
    assert unknown.code == 1 and "no snapshot 5" in unknown.err and "1, 2" in unknown.err


def test_effort_is_stored_and_passed_when_the_harness_has_a_flag(world: World, hold: Hold) -> None:
    world.harnesses["effortful"] = {
        "command": [str(hold.script), "{prompt}"],
        "effort_flag": "--effort",
        "effort_levels": ["low", "high"],
    }
    world.set_harness("hold", [str(hold.script), "{prompt}"])  # rewrites config.yml

    task = world.create("hard", "Think hard", "--harness", "effortful", "--effort", "high")
    assert json.loads(world.ok("task", "show", task, "--json").out)["effort"] == "high"
    argv = hold.argv(task)
    assert argv[:2] == ["--effort", "high"] and "Think hard" in argv[-1]

    # A harness without an effort setting: refused, not silently dropped, and nothing
    # is written.
    tip = tasks_tip(world)
    for option in ("--effort", "--review-effort"):
        plain = world.orange(
            "task", "create", "plain", "Plain", "--harness", "hold", option, "high"
        )
        assert plain.code == 1 and 'harness "hold" has no effort setting' in plain.err
    assert tasks_tip(world) == tip

    # A level the harness does not list: refused before anything is written.
    bad = world.orange("task", "create", "bad", "Bad", "--harness", "effortful", "--effort", "max")
    assert bad.code == 1 and "no effort level" in bad.err
    assert tasks_tip(world) == tip
    for reviewer in (("--review-harness", "effortful"), ()):  # named, or the task's own
        bad_review = world.orange(
            "task", "create", "bad2", "Bad", "--harness", "effortful", *reviewer,
            "--review-effort", "max",
        )  # fmt: skip
        assert bad_review.code == 1 and 'no effort level "max"' in bad_review.err
        assert tasks_tip(world) == tip


def test_a_new_branch_keeps_unpushed_commits_of_the_local_default_branch(
    world: World, tmp_path: Path, hold: Hold
) -> None:
    add_origin(world, tmp_path)
    local = commit_on(world.repo, "main", "mine.txt", "not pushed yet\n")
    task = world.create("on-top", "On top of local main", "--harness", "hold")
    tree = worktree_of(world, task)
    assert rev(tree, "HEAD") == local and (tree / "mine.txt").exists()


def test_merge_refuses_when_the_worktree_is_on_another_branch(world: World, hold: Hold) -> None:
    task = world.create("planned", "Work on one branch", "--harness", "hold")
    tree = worktree_of(world, task)
    to_reviewing(world, task)
    git(tree, "checkout", "-q", "-b", "actual")
    (tree / "work.txt").write_text("the real work\n")
    git(tree, "add", "work.txt")
    git(tree, "commit", "-q", "-m", "real work")
    main_before = rev(world.repo, "main")
    refused = world.orange("task", "merge", task)
    assert refused.code == 1 and "actual" in refused.err and "--branch" in refused.err
    assert rev(world.repo, "main") == main_before and world.status(task) == "reviewing"
    # Adopting the branch, then merging, merges the real work.
    world.ok("task", "update", task, "--branch", "actual")
    world.ok("task", "merge", task)
    assert git(world.repo, "show", "main:work.txt") == "the real work\n"
    assert world.status(task) == "done"


def test_acquire_never_hands_an_ended_tasks_leftover_work_to_a_new_task(
    world: World, hold: Hold
) -> None:
    world.ok("project", "update", "proj", "--pool-size", "1")
    first = world.create("first", "First", "--harness", "hold")
    tree = worktree_of(world, first)
    (tree / "leftover.txt").write_text("first's unsaved work\n")
    forge_status(world, first, "cancelled")  # ended without releasing its worktree
    result = world.orange("task", "create", "second", "Second", "--harness", "hold", "--json")
    second = json.loads(result.out)["id"]
    assert result.code == 1 and "workspace gc" in result.err and "proj--1" in result.err
    assert world.status(second) == "pending"
    assert (tree / "leftover.txt").read_text() == "first's unsaved work\n"
    assert git(tree, "symbolic-ref", "--short", "HEAD").strip() == "first"
    # gc saves the leftover (it belongs to the ended task), then starts the queued task
    # in the freed workspace (issue 29: every release starts the next).
    assert f"refs/orange/snapshots/{first}/1" in world.ok("workspace", "gc", "--force").out
    world.wait_status(second, "planning")
    assert worktree_of(world, second) == tree and git(tree, "status", "--porcelain") == ""
    assert git(tree, "symbolic-ref", "--short", "HEAD").strip() == "second"


def test_attach_respawns_a_dead_agent_then_attaches_a_real_terminal(
    world: World, hold: Hold
) -> None:
    """`task attach` from a terminal: the dead worker is respawned first, then a tmux
    client is attached to the task's session (a pseudo-terminal from `script`)."""
    import subprocess

    assert shutil.which("script"), "needs `script` (util-linux) for a pseudo-terminal"
    task_id = world.create("attach-me", "Attach to me", "--harness", "hold")
    hold.argv(task_id)
    session = world.task(task_id).str_field("tmux_session")
    world.tmux("kill-session", "-t", session)  # the agent and its session die
    orange = str(Path(sys.executable).with_name("orange"))
    client = subprocess.Popen(
        ["script", "-qfec", f"{orange} task attach {task_id}", "/dev/null"],
        cwd=world.repo,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(
            lambda: session in world.tmux("list-clients", "-F", "#{client_session}"),
            20,
            "a client attached to the task's session",
        )
        launches = wait_for(
            lambda: hold.launches(task_id)[1:] and hold.launches(task_id), 20, "the respawned agent"
        )
        assert len(launches) == 2
        assert launches[-1][-1].startswith("# Resuming:")  # respawned with its respawn prompt
    finally:
        world.tmux("detach-client", "-s", session)
        try:
            client.wait(timeout=10)
        except subprocess.TimeoutExpired:
            client.kill()


def test_peek_on_an_exited_agent_says_so_with_its_status(world: World, tmp_path: Path) -> None:
    script = tmp_path / "quitter"
    script.write_text("#!/bin/sh\necho 'QUITTER last words'\nexit 7\n")
    script.chmod(0o755)
    world.set_harness("quitter", [str(script), "{prompt}"])
    task = world.create("quits", "Exit at once", "--harness", "quitter")
    # A crash in planning is left for a human (attention set): the pane stays dead.
    wait_for(lambda: "crash 1" in world.task(task).str_field("attention"), what="the crash")

    out = world.ok("task", "peek", task).out
    assert out.splitlines()[0] == "the worker agent exited with status 7; its last output:"
    assert out.rstrip("\n").endswith("QUITTER last words")
    peeked = json.loads(world.ok("task", "peek", task, "--json").out)
    assert peeked["alive"] is False and peeked["exit_status"] == 7
    assert peeked["output"].endswith("QUITTER last words")


def test_an_agent_picked_without_harness_is_named_with_why(world: World, hold: Hold) -> None:
    world.set_harness("hold", [str(hold.script), "{prompt}"])  # no built-in agent on PATH
    said = world.ok("task", "create", "picked", "Picked for me").out
    first = next(iter(world.harnesses))  # config.yml's first harness
    assert (
        f"agent: {first} (no built-in agent is on PATH: the first harness of config.yml; "
        "--harness chooses another)"
    ) in said
    named = world.ok("task", "create", "named", "Named", "--harness", "hold").out
    assert "agent:" not in named  # chosen by the user: nothing to explain
