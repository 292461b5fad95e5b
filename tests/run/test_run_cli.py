"""`orange run`'s command line: the request beside the subcommands, and bad input (one
line saying what is wrong, a non-zero exit, nothing written to the tasks ref)."""

from __future__ import annotations

from tests.conftest import git, run_orange
from tests.run.conftest import RunWorld, plan


def tasks_ref(world: RunWorld) -> str:
    return git(world.repo, "rev-parse", "--verify", "--quiet", "refs/orange/tasks", check=False)


def test_run_list_lists_and_run_dash_dash_list_runs_the_request_list(world: RunWorld) -> None:
    before = tasks_ref(world)
    listed = world.run("list")
    assert (listed.code, listed.out.strip()) == (0, "no runs")
    assert tasks_ref(world) == before
    world.scenario(plan=[plan([["a"]])], edits={"Title a": {"a.txt": "a"}})
    # A real process: the confirmation is answered on stdin.
    result = run_orange("run", "--", "list", cwd=world.repo, stdin="yes\n")
    assert result.code == 0, result.err
    assert result.out.strip().endswith("https://github.com/example/proj/pull/7")
    runs = world.run("list", "--json").json()["runs"]
    assert [(r["request"], r["status"]) for r in runs] == [("list", "completed")]
    lines = world.run("list").out.splitlines()
    assert len(lines) == 1
    assert lines[0].split()[:3] == [runs[0]["id"], "completed", "COMPLETED"]
    assert lines[0].endswith("list")


BAD = [
    (("x", "--failure-policy", "bogus"), "unknown failure policy 'bogus'"),
    (("x", "--agents", "0"), "--agents must be a whole number of at least 1"),
    (("x", "--max-iterations", "0"), "--max-iterations must be a whole number of at least 1"),
    (("",), "the request is empty"),
    (("  \n",), "the request is empty"),
    (("x", "--architect", "nope"), 'unknown harness "nope"'),
    (("x", "--swe", "nope"), 'unknown harness "nope"'),
    (("x", "--architect", "ghost"), "runs `orange-test-no-such-agent`, which is not on PATH"),
    (("show", "nope"), "no run 'nope'"),
    (("resume", "nope"), "no run 'nope'"),
    (("cancel", "nope"), "no run 'nope'"),
    (("x", "--answers", "no-such-answers.txt"), "cannot read the answers file"),
]


def test_bad_input_is_one_line_and_writes_nothing(world: RunWorld) -> None:
    before = tasks_ref(world)
    for args, said in BAD:
        result = world.run(*args)
        assert result.code != 0, args
        assert result.out == "", args
        assert len(result.err.strip().splitlines()) == 1, result.err
        assert said in result.err, (args, result.err)
        assert tasks_ref(world) == before, args
    assert world.calls() == []
    assert world.run("list").out.strip() == "no runs"


def test_repo_sync_fetches_the_remotes_branches(world: RunWorld) -> None:
    """REPO_SYNC is a `git fetch` of origin (not a pull): a commit pushed to origin by
    someone else is fetched, the user's checkout left as it was."""
    other = world.tmp / "other"
    git(world.tmp, "clone", "-q", str(world.origin), str(other))
    (other / "theirs.txt").write_text("theirs\n")
    git(other, "add", "theirs.txt")
    git(other, "commit", "-q", "-m", "theirs")
    git(other, "push", "-q", "origin", "main")
    pushed = git(other, "rev-parse", "HEAD").strip()
    world.scenario(plan=[plan([["a"]])], edits={"Title a": {"a.txt": "a"}})
    result = world.run("x", "--skip-clarification", "--no-pr")
    assert result.code == 0, result.err
    assert "fetched origin" in result.out
    assert git(world.repo, "rev-parse", "origin/main").strip() == pushed
    assert git(world.repo, "rev-parse", "main").strip() != pushed
    assert not (world.repo / "theirs.txt").exists()
