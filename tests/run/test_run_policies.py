"""`orange run`'s failure policies (seed 004: retry, continue, stop) on a subtask whose
agent always fails, and on a merge conflict between two agents' branches of one wave."""

from __future__ import annotations

from typing import Any

from tests.conftest import git
from tests.run.conftest import RunWorld, plan


def edits(*ids: str) -> dict[str, dict[str, str]]:
    return {f"Title {i}": {f"{i}.txt": f"made by {i}"} for i in ids}


def implemented(world: RunWorld, sid: str) -> int:
    return len([c for c in world.calls("implement") if c[1] == f"Title {sid}"])


def by_id(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in run["subtasks"]}


def on_branch(world: RunWorld, branch: str) -> set[str]:
    return set(git(world.repo, "ls-tree", "--name-only", branch).split())


def test_retry_implements_twice_then_gives_up_and_the_run_completes(world: RunWorld) -> None:
    world.scenario(plan=[plan([["a", "b"]])], edits=edits("a", "b"), fail=["Title a"])
    result = world.run("x", "--skip-clarification", "--no-pr", "--json")
    assert result.code == 0, result.err
    run = result.json()["run"]
    assert run["status"] == "completed"
    subs = by_id(run)
    assert (subs["a"]["status"], subs["a"]["retries"]) == ("failed", 1)
    assert "exited with code 1" in subs["a"]["note"]
    assert subs["b"]["status"] == "done"
    assert implemented(world, "a") == 2
    assert implemented(world, "b") == 1
    assert on_branch(world, run["branch"]) >= {"b.txt"}
    assert "a.txt" not in on_branch(world, run["branch"])


def test_continue_implements_once_and_records_why(world: RunWorld) -> None:
    world.scenario(plan=[plan([["a", "b"]])], edits=edits("a", "b"), fail=["Title a"])
    result = world.run("x", "--skip-clarification", "--no-pr", "--failure-policy", "continue")
    assert result.code == 0, result.err
    run = world.run("list", "--json").json()["runs"][0]
    assert run["status"] == "completed"
    subs = by_id(run)
    assert (subs["a"]["status"], subs["a"]["retries"]) == ("failed", 0)
    assert "exited with code 1" in subs["a"]["note"]
    assert subs["b"]["status"] == "done"
    assert implemented(world, "a") == 1
    task = [t for t in world.tasks() if t.get("run") == run["id"] and t.get("subtask") == "a"]
    assert [t["status"] for t in task] == ["failed"]


def test_stop_fails_the_run_and_resume_finishes_it(world: RunWorld) -> None:
    world.scenario(plan=[plan([["a", "b"], ["c"]])], edits=edits("a", "b", "c"), fail=["Title a"])
    result = world.run("x", "--skip-clarification", "--no-pr", "--failure-policy", "stop", "--json")
    assert result.code == 1
    run = result.json()["run"]
    assert run["status"] == "failed"
    assert "policy is stop" in run["error"]
    subs = by_id(run)
    assert subs["a"]["status"] == "blocked"
    assert subs["b"]["status"] == "done"  # merged: what was done stays on the branch
    assert subs["c"]["status"] == "planned"
    assert implemented(world, "a") == 1
    assert implemented(world, "c") == 0
    assert "b.txt" in on_branch(world, run["branch"])
    world.scenario(plan=[plan([["a", "b"], ["c"]])], edits=edits("a", "b", "c"))
    resumed = world.run("resume", run["id"], "--json")
    assert resumed.code == 0, resumed.err
    again = resumed.json()["run"]
    assert again["status"] == "completed"
    assert [s["status"] for s in again["subtasks"]] == ["done"] * 3
    assert (implemented(world, "a"), implemented(world, "b"), implemented(world, "c")) == (2, 1, 1)
    assert on_branch(world, run["branch"]) >= {"a.txt", "b.txt", "c.txt"}


def test_resume_gives_a_subtask_stopped_at_its_iterations_a_new_round(world: RunWorld) -> None:
    world.scenario(plan=[plan([["a"]])], edits=edits("a"), review={"Title a": [False, False, True]})
    args = ("x", "--skip-clarification", "--no-pr", "--failure-policy", "stop")
    result = world.run(*args, "--max-iterations", "2", "--json")
    assert result.code == 1
    run = result.json()["run"]
    assert by_id(run)["a"]["status"] == "blocked"
    assert "not approved after 2 iterations" in by_id(run)["a"]["note"]
    resumed = world.run("resume", run["id"], "--json")  # the architect now approves
    assert resumed.code == 0, resumed.err
    assert [s["status"] for s in resumed.json()["run"]["subtasks"]] == ["done"]
    assert implemented(world, "a") == 3
    assert "a.txt" in on_branch(world, run["branch"])


def clash() -> dict[str, dict[str, str]]:
    return {"Title a": {"same.txt": "line from a"}, "Title b": {"same.txt": "line from b"}}


def test_a_merge_conflict_goes_back_to_its_agent_under_retry(world: RunWorld) -> None:
    world.scenario(plan=[plan([["a", "b"]])], edits=clash())
    result = world.run("x", "--skip-clarification", "--no-pr", "--json")
    assert result.code == 0, result.err
    run = result.json()["run"]
    assert run["status"] == "completed"
    assert [s["status"] for s in run["subtasks"]] == ["done", "done"]
    resolving = [c for c in world.calls("implement") if c[1] == "Title b"]
    assert len(resolving) == 2  # its work, then the conflict
    assert implemented(world, "a") == 1
    text = git(world.repo, "show", f"{run['branch']}:same.txt")
    assert "line from a" in text and "line from b" in text
    assert "<<<<<<<" not in text
    merges = git(world.repo, "log", "--merges", "--format=%s", run["branch"]).splitlines()
    assert len([m for m in merges if m.startswith("Merge subtask")]) == 2


def test_a_merge_conflict_fails_the_subtask_under_continue(world: RunWorld) -> None:
    world.scenario(plan=[plan([["a", "b"]])], edits=clash())
    args = ("x", "--skip-clarification", "--no-pr", "--failure-policy", "continue", "--json")
    result = world.run(*args)
    assert result.code == 0, result.err
    run = result.json()["run"]
    assert run["status"] == "completed"
    subs = by_id(run)
    assert subs["a"]["status"] == "done"
    assert subs["b"]["status"] == "failed"
    assert "conflicts in same.txt" in subs["b"]["note"]
    assert implemented(world, "b") == 1  # not sent back to its agent
    assert git(world.repo, "show", f"{run['branch']}:same.txt") == "line from a\n"
    # Its branch is kept, with its own work.
    assert git(world.repo, "show", f"{subs['b']['branch']}:same.txt") == "line from b\n"


def test_a_merge_conflict_under_stop_is_resolved_on_resume(world: RunWorld) -> None:
    world.scenario(plan=[plan([["a", "b"]])], edits=clash())
    args = ("x", "--skip-clarification", "--no-pr", "--failure-policy", "stop", "--json")
    result = world.run(*args)
    assert result.code == 1
    run = result.json()["run"]
    assert run["status"] == "failed"
    assert by_id(run)["b"]["status"] == "conflict"  # its task is blocked
    assert "conflicts in same.txt" in by_id(run)["b"]["note"]
    task = [t for t in world.tasks() if t.get("run") == run["id"] and t.get("subtask") == "b"]
    assert [t["status"] for t in task] == ["blocked"]
    resumed = world.run("resume", run["id"], "--json")
    assert resumed.code == 0, resumed.err
    assert resumed.json()["run"]["status"] == "completed"
    text = git(world.repo, "show", f"{run['branch']}:same.txt")
    assert "line from a" in text and "line from b" in text
    assert implemented(world, "b") == 2  # its work, then the conflict on resume
