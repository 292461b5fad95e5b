"""`orange run` as real processes: a runner killed with SIGKILL mid-wave and resumed, two
resumes at once, and `orange run cancel` of a working runner.  The scripted SWE
(`fakes/agent.py`) blocks on one subtask so each test catches the runner mid-wave."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from orange.run.headless import alive
from tests.conftest import git, orange_bin
from tests.helpers import retry_until
from tests.run.conftest import RunWorld, plan

WAVES = [["a", "b"], ["c"]]


def edits(*ids: str) -> dict[str, dict[str, str]]:
    return {f"Title {i}": {f"{i}.txt": f"made by {i}"} for i in ids}


def wait_for(what: str, ready: Callable[[], bool], timeout: float = 60.0) -> None:
    retry_until(ready, timeout, what=what)


@contextmanager
def runner(world: RunWorld, *args: str) -> Iterator[subprocess.Popen[str]]:
    """``orange run ARGS`` as its own process; killed on the way out if still there."""
    proc = subprocess.Popen(
        [orange_bin(), "run", *args],
        cwd=world.repo,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def the_run(world: RunWorld) -> dict[str, Any]:
    runs = world.run("list", "--json").json()["runs"]
    return dict(runs[0]) if runs else {}


def status_of(world: RunWorld, sid: str) -> str | None:
    for sub in the_run(world).get("subtasks", []):
        if sub["id"] == sid:
            return str(sub["status"])
    return None


def implemented(world: RunWorld, sid: str) -> int:
    return len([c for c in world.calls("implement") if c[1] == f"Title {sid}"])


def blocked_agent(world: RunWorld, sid: str, proc: subprocess.Popen[str]) -> int:
    """Wait until the SWE of ``sid`` blocks (and ``a`` is approved); its pid.  A runner
    that ended meanwhile fails the wait with what it said."""
    working = world.agent_dir / f"working-Title {sid}"

    def at_work() -> bool:
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the runner ended ({proc.returncode}): {out}{err}")
        return working.exists()

    wait_for(f"{sid}'s agent at work", at_work)
    wait_for("subtask a approved", lambda: status_of(world, "a") == "approved")
    return int(working.read_text())


def test_kill_9_mid_wave_then_resume_redoes_nothing_finished(world: RunWorld) -> None:
    world.scenario(plan=[plan(WAVES)], edits=edits("a", "b", "c"), block=["Title b"])
    with runner(world, "x", "--skip-clarification", "--no-pr") as proc:
        old_agent = blocked_agent(world, "b", proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert alive(old_agent)  # the killed runner left its agent working
    run = the_run(world)
    assert run["status"] == "interrupted"
    # From now on the agent does not block (the one left running still does, until it
    # is stopped: nothing releases it).
    world.scenario(plan=[plan(WAVES)], edits=edits("a", "b", "c"))
    resumed = world.run("resume", run["id"], "--json")
    assert resumed.code == 0, resumed.err
    final = resumed.json()["run"]
    assert final["status"] == "completed"
    assert [s["status"] for s in final["subtasks"]] == ["done"] * 3
    assert (implemented(world, "a"), implemented(world, "b"), implemented(world, "c")) == (1, 2, 1)
    assert not alive(old_agent)
    # The old agent was stopped before the new one on b started.
    of_b = [(c[0], c[2]) for c in world.calls() if c[1] == "Title b" and c[0] != "review"]
    assert of_b[:2] == [("implement", old_agent), ("stopped", old_agent)]
    assert of_b[2][0] == "implement" and of_b[2][1] != old_agent
    files = set(git(world.repo, "ls-tree", "--name-only", final["branch"]).split())
    assert {"a.txt", "b.txt", "c.txt"} <= files


def test_two_resumes_at_once_one_wins(world: RunWorld) -> None:
    world.scenario(
        clarify=[{"status": "ready", "message": "ok"}],
        plan=[plan([["a"]])],
        edits=edits("a"),
        block=["Title a"],
    )
    empty = world.answers()
    first = world.run("x", "--answers", str(empty), "--no-pr")
    assert first.code == 1  # no answer to the confirmation: interrupted, resumable
    run_id = the_run(world)["id"]
    answers = world.answers("yes")
    with runner(world, "resume", run_id, "--answers", str(answers), "--json") as proc:
        wait_for("a's agent at work", (world.agent_dir / "working-Title a").exists)
        second = world.run("resume", run_id, "--answers", str(answers))
        assert second.code != 0
        assert "being run or resumed elsewhere" in second.err
        assert len(second.err.strip().splitlines()) == 1, second.err
        Path(world.agent_dir / "release").touch()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    assert '"status": "completed"' in out
    assert implemented(world, "a") == 1


def test_cancel_stops_the_runner_and_its_agents_and_keeps_branches(world: RunWorld) -> None:
    world.scenario(plan=[plan(WAVES)], edits=edits("a", "b", "c"), block=["Title b"])
    with runner(world, "x", "--skip-clarification", "--no-pr") as proc:
        agent = blocked_agent(world, "b", proc)
        run_id = the_run(world)["id"]
        cancelled = world.run("cancel", run_id)
        assert cancelled.code == 0, cancelled.err
        _, err = proc.communicate(timeout=30)
    # The runner's own command fails, saying so: a script must not read "done".
    assert proc.returncode == 1
    assert err.strip().splitlines()[-1].startswith(f"orange: run {run_id} was cancelled")
    assert not alive(agent)
    assert ["stopped", "Title b", agent] in world.calls()
    run = world.run("show", run_id, "--json").json()["run"]
    assert run["status"] == "cancelled"
    assert [s["status"] for s in run["subtasks"]] == ["cancelled"] * 3
    tasks = {t["subtask"]: t["status"] for t in world.tasks() if t.get("run") == run_id}
    assert tasks == {"a": "cancelled", "b": "cancelled", "c": "cancelled"}
    assert implemented(world, "c") == 0
    branches = git(world.repo, "branch", "--format=%(refname:short)").split()
    assert {run["branch"], *(s["branch"] for s in run["subtasks"][:2])} <= set(branches)
    a_branch = run["subtasks"][0]["branch"]
    assert "a.txt" in git(world.repo, "ls-tree", "--name-only", a_branch).split()
