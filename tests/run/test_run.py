"""`orange run` end to end: real git, real worktrees from the pool, the scripted
architect and SWE (`fakes/agent.py`) and the fake `gh`."""

from __future__ import annotations

import json
from pathlib import Path

from orange.run.state import runner_lock
from orange.store.repo import open_repo
from orange.store.store import TaskStore
from tests.conftest import git, run_orange
from tests.run.conftest import RunWorld, plan

TWO_WAVES = [["a", "b"], ["c", "d"]]


def edits(*ids: str) -> dict[str, dict[str, str]]:
    return {f"Title {i}": {f"{i}.txt": f"made by {i}"} for i in ids}


def test_two_waves_of_two_end_in_a_pr(world: RunWorld) -> None:
    world.scenario(
        clarify=[
            {"status": "questions", "message": "Which files?"},
            {"status": "ready", "message": "Add a.txt to d.txt."},
        ],
        plan=[plan(TWO_WAVES)],
        edits=edits("a", "b", "c", "d"),
    )
    answers = world.answers("four text files", "yes")
    result = world.run("add four files", "--answers", str(answers), "--agents", "2", "--json")
    assert result.code == 0, result.err
    run = result.json()["run"]
    assert run["status"] == "completed"
    assert run["step"] == "COMPLETED"
    assert run["pr_url"] == "https://github.com/example/proj/pull/7"
    assert [s["status"] for s in run["subtasks"]] == ["done"] * 4
    assert [s["iterations"] for s in run["subtasks"]] == [1] * 4
    branch = run["branch"]
    assert branch == f"swe-team/add-four-files-{run['id']}"
    assert [s["branch"] for s in run["subtasks"]] == [f"{branch}-agent-{n}" for n in (1, 2, 3, 4)]
    # Every subtask's file is on the run's branch, which was pushed; merges are --no-ff.
    files = git(world.repo, "ls-tree", "--name-only", branch).split()
    assert {"a.txt", "b.txt", "c.txt", "d.txt"} <= set(files)
    merges = git(world.repo, "log", "--merges", "--format=%s", branch).splitlines()
    assert len(merges) == 4
    assert (
        git(world.origin, "rev-parse", branch).strip()
        == git(world.repo, "rev-parse", branch).strip()
    )
    # The second wave started from the first one's merges: c's branch holds a.txt.
    assert "a.txt" in git(world.repo, "ls-tree", "--name-only", f"{branch}-agent-3").split()
    create = [c for c in world.gh_calls() if c[:2] == ["pr", "create"]]
    assert len(create) == 1
    assert create[0][create[0].index("--head") + 1] == branch
    assert create[0][create[0].index("--base") + 1] == "main"
    # The refined requirement reached the plan; each subtask was one task, now done.
    assert len(world.calls("implement")) == 4
    subtasks = [t for t in world.tasks() if t.get("run") == run["id"]]
    assert sorted(t["status"] for t in subtasks) == ["done"] * 4
    assert all(t["workflow"] == "run-subtask" and not t.get("workspace") for t in subtasks)
    # Every step is a commit with the run's trailers.
    log = git(world.repo, "log", "--format=%B%x00", "refs/orange/tasks").split("\x00")
    steps = [
        line.split(": ", 1)[1]
        for msg in log
        for line in msg.splitlines()
        if line.startswith("Orange-Step: ")
    ]
    for step in (
        "QUEUED",
        "REPO_SYNC",
        "WORKSPACE_CREATED",
        "BRANCH_CREATED",
        "CLARIFYING",
        "CLARIFIED",
        "PLANNING",
        "PLANNED",
        "AGENTS_SPAWNED",
        "SUBTASK_IMPLEMENTING",
        "SUBTASK_TESTING",
        "SUBTASK_REVIEWING",
        "SUBTASK_DONE",
        "MERGING_AGENTS",
        "CREATING_PR",
        "COMPLETED",
    ):
        assert step in steps, step
    shown = world.run("show", run["id"], "--json").json()["run"]
    assert [t["role"] for t in shown["clarification"]] == ["assistant", "user"]
    assert shown["requirement"] == "Add a.txt to d.txt."


def test_a_refused_confirmation_goes_back_into_the_loop(world: RunWorld) -> None:
    world.scenario(
        clarify=[
            {"status": "ready", "message": "Add one file."},
            {"status": "ready", "message": "Add one file named x."},
        ],
        plan=[plan([["a"]])],
        edits=edits("a"),
    )
    answers = world.answers("no, name it x", "YES")
    result = world.run("add a file", "--answers", str(answers), "--no-pr", "--json")
    assert result.code == 0, result.err
    run = result.json()["run"]
    assert run["status"] == "completed"
    assert len(world.calls("clarify")) == 2
    shown = world.run("show", run["id"], "--json").json()["run"]
    assert shown["clarification"] == [
        {"role": "assistant", "text": "Add one file."},
        {"role": "user", "text": "no, name it x"},
    ]
    assert shown["requirement"] == "Add one file named x."
    assert world.gh_calls() == []


def two_questions(world: RunWorld) -> None:
    """The architect asks twice, then confirms; one subtask."""
    world.scenario(
        clarify=[
            {"status": "questions", "message": "Q1?"},
            {"status": "questions", "message": "Q2?"},
            {"status": "ready", "message": "Done."},
        ],
        plan=[plan([["a"]])],
        edits=edits("a"),
    )


def test_answers_running_out_leave_the_run_resumable(world: RunWorld) -> None:
    two_questions(world)
    answers = world.answers("first answer")
    result = world.run("do it", "--answers", str(answers), "--no-pr")
    assert result.code == 1
    last = result.err.strip().splitlines()[-1]  # before it, the questions and answers
    assert last.startswith("orange: the answers file ran out after 1 answers")
    runs = world.run("list", "--json").json()["runs"]
    assert [r["status"] for r in runs] == ["interrupted"]
    answers.write_text("first answer\nsecond answer\nyes\n")
    resumed = world.run("resume", runs[0]["id"], "--answers", str(answers), "--json")
    assert resumed.code == 0, resumed.err
    assert resumed.json()["run"]["status"] == "completed"
    # The first turn was not asked again: Q1, Q2, then ready.
    assert len(world.calls("clarify")) == 3
    shown = world.run("show", runs[0]["id"], "--json").json()["run"]
    assert [t["text"] for t in shown["clarification"]] == [
        "Q1?",
        "first answer",
        "Q2?",
        "second answer",
    ]


def test_a_new_answers_file_starts_from_its_first_line(world: RunWorld) -> None:
    two_questions(world)
    first = world.answers("first answer")
    assert world.run("do it", "--answers", str(first), "--no-pr").code == 1
    run_id = world.run("list", "--json").json()["runs"][0]["id"]
    second = first.with_name("more-answers.txt")
    second.write_text("second answer\nyes\n")
    resumed = world.run("resume", run_id, "--answers", str(second), "--json")
    assert resumed.code == 0, resumed.err
    shown = world.run("show", run_id, "--json").json()["run"]
    assert [t["text"] for t in shown["clarification"]][-1] == "second answer"


def test_no_terminal_and_no_answers_file_says_what_to_pass(world: RunWorld) -> None:
    world.scenario(clarify=[{"status": "questions", "message": "Q1?"}])
    result = run_orange("run", "do it", "--no-pr", cwd=world.repo, stdin="")
    assert result.code == 1
    last = result.err.strip().splitlines()[-1]
    assert "there is no terminal to answer it: pass --answers FILE" in last


def test_a_subtask_that_fails_its_tests_once_passes_after_feedback(world: RunWorld) -> None:
    world.scenario(plan=[plan([["a"]])], edits=edits("a"), tests={"Title a": [False, True]})
    result = world.run("x", "--skip-clarification", "--no-pr", "--json")
    assert result.code == 0, result.err
    sub = result.json()["run"]["subtasks"][0]
    assert (sub["status"], sub["iterations"]) == ("done", 2)
    assert len(world.calls("implement")) == 2
    assert len(world.calls("review")) == 1
    # A run's subtasks are bound without a claim pushed to the sync remote (a run
    # belongs to its host; no network call per subtask).
    assert git(world.repo, "ls-remote", "origin", "refs/orange/tasks").strip() == ""


def test_a_subtask_rejected_twice_is_approved_on_the_third(world: RunWorld) -> None:
    world.scenario(plan=[plan([["a"]])], edits=edits("a"), review={"Title a": [False, False, True]})
    result = world.run("x", "--skip-clarification", "--no-pr", "--json")
    assert result.code == 0, result.err
    sub = result.json()["run"]["subtasks"][0]
    assert (sub["status"], sub["iterations"]) == ("done", 3)
    assert len(world.calls("review")) == 3


def test_malformed_plan_is_retried_once(world: RunWorld) -> None:
    world.scenario(plan=["not json at all", plan([["a"]])], edits=edits("a"))
    result = world.run("x", "--skip-clarification", "--no-pr", "--json")
    assert result.code == 0, result.err
    assert len(world.calls("plan")) == 2


def test_malformed_plan_twice_fails_the_run_resumably(world: RunWorld) -> None:
    bad = json.dumps(
        {
            "subtasks": [{"id": "a", "title": "A", "description": "d"}],
            "parallel_groups": [["a", "zz"]],
        }
    )
    world.scenario(plan=[bad, bad, plan([["a"]])], edits=edits("a"))
    result = world.run("x", "--skip-clarification", "--no-pr", "--json")
    assert result.code == 1
    run = result.json()["run"]
    assert run["status"] == "failed"
    assert 'unknown subtask "zz"' in run["error"]
    resumed = world.run("resume", run["id"], "--json")
    assert resumed.code == 0, resumed.err
    assert resumed.json()["run"]["status"] == "completed"
    assert len(world.calls("plan")) == 3


def test_a_runs_worktree_is_listed_and_collected_once_the_run_ended(world: RunWorld) -> None:
    """The run's own worktree is made as the pool's are: `workspace list` shows it
    while the run may resume, and `workspace gc` removes it once the run ended (never
    with uncommitted work in it; the run's branch stays)."""
    two_questions(world)
    assert world.run("do it", "--answers", str(world.answers("first")), "--no-pr").code == 1
    run_id = world.run("list", "--json").json()["runs"][0]["id"]

    def workspaces() -> list[dict[str, str]]:
        rows = world.cli.ok("workspace", "list", "--json", cwd=world.repo).json()["workspaces"]
        return [row for row in rows if row["run"]]

    def gc() -> dict[str, list[str]]:
        return dict(world.cli.ok("workspace", "gc", "--json", cwd=world.repo).json())

    (row,) = workspaces()
    path, branch = Path(row["path"]), row["branch"]
    assert (row["name"], row["run"]) == (f"run-{run_id}", run_id)
    assert branch and git(path, "symbolic-ref", "--short", "HEAD").strip() == branch
    assert f"run {run_id} ({branch})" in world.cli.ok("workspace", "list", cwd=world.repo).out

    assert gc()["released"] == [] and path.is_dir()  # an interrupted run resumes there
    assert world.run("cancel", run_id).code == 0
    (path / "scratch.txt").write_text("not committed\n")
    assert gc()["kept"] == [
        f"run-{run_id}: 1 uncommitted change (commit or discard them; the branch stays)"
    ]
    (path / "scratch.txt").unlink()
    with runner_lock(TaskStore(open_repo(world.repo)), run_id) as held:
        assert held and gc()["released"] == []  # a runner still works in it
    assert gc()["released"] == [f"run-{run_id}"]
    assert not path.exists() and workspaces() == []
    assert str(path) not in git(world.repo, "worktree", "list")
    assert git(world.repo, "rev-parse", "--verify", f"refs/heads/{branch}").strip()
