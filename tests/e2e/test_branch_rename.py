"""Renaming a live task's branch, as the worker prompt asks every agent to (``git branch
-m`` in its worktree, then ``orange task update --branch``), while the monitor runs:
no false death, no crash counted (issue 29: seen once in 16 tries).

The race: the rename commits the new branch and session name and records the session
here before tmux has renamed the session.  A monitor pass in between finds the recorded
session gone.  The test puts a pass exactly there, every time: ``tmux`` on the rename's
PATH is a wrapper that, asked to rename a session, first runs ``orange monitor --once``
(a tmux server slow to answer, with the monitor woken meanwhile), then the real tmux."""

from __future__ import annotations

import os
import shlex
import shutil
import stat

from orange.home import orange_home
from orange.monitor import loop as monitor_loop
from tests.conftest import git, orange_bin, run_orange
from tests.e2e.conftest import World, sessions_on, wait_for
from tests.e2e.test_queue import HOLD


def test_a_monitor_pass_inside_a_live_rename_counts_no_crash(world: World) -> None:
    world.set_harness("hold", HOLD)
    task_id = world.create("", "Rename my branch", "--harness", "hold")
    bound = wait_for(lambda: world.task(task_id).str_field("workspace"), what="its worktree")
    worktree = orange_home() / "workspaces" / bound
    old_session = wait_for(lambda: world.task(task_id).str_field("tmux_session"))

    wrappers = world.repo.parent / "slow-tmux"
    wrappers.mkdir()
    seen = wrappers / "seen"
    real = shutil.which("tmux")
    assert real is not None
    wrapper = wrappers / "tmux"
    wrapper.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" rename-session "*)\n'
        f"  {shlex.quote(real)} -L {shlex.quote(world.socket)} list-sessions "
        f"-F '#{{session_name}}' >> {shlex.quote(str(seen))}\n"
        f"  {shlex.quote(orange_bin())} monitor --once >/dev/null 2>&1\n"
        f"  echo pass-ran >> {shlex.quote(str(seen))} ;;\n"
        "esac\n"
        f'exec {shlex.quote(real)} "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    agent = {
        "ORANGE_TASK_ID": task_id,
        "ORANGE_AGENT_ROLE": "worker",
        "PATH": f"{wrappers}:{os.environ['PATH']}",
    }

    git(worktree, "branch", "-m", world.task(task_id).branch, "feature/renamed")
    adopted = run_orange("task", "update", "--branch", cwd=worktree, env=agent)
    assert adopted.code == 0, adopted.err

    # The pass ran inside the window: the ref already named the new session, tmux
    # still had the old one.
    said = seen.read_text().split()
    assert said[-1] == "pass-ran" and old_session in said
    after = world.task(task_id)
    assert after.branch == "feature/renamed"
    assert after.str_field("tmux_session") not in said
    monitor_loop.run_pass()  # one more, on the settled state
    after = world.task(task_id)
    assert (after.status, after.fields.get("crash_count") or 0) == ("planning", 0)
    assert after.str_field("attention") == ""
    assert after.str_field("tmux_session") in sessions_on(world.socket)
