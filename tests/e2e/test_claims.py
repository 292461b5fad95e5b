"""Two hosts starting the same pending task at once (two real processes, a bare hub
with the server hook, scripted agents in tmux): exactly one runs an agent, the other
says where the task runs and keeps no worktree and no session.  Then the other takes
the task over (`orange task take`): the first stops its agent at its next sync."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from orange.home import host_name, orange_home
from tests.conftest import git, orange_bin, run_orange
from tests.e2e.conftest import CLAIM_TIMEOUT, World, add_hub, sessions_on, teammate_clone

HOLD = ["sh", "-c", "sleep 600", "{prompt}"]


def test_two_hosts_claiming_one_task_at_once_run_one_agent(world: World, tmp_path: Path) -> None:
    hub = add_hub(world, tmp_path)
    world.set_harness("hold", HOLD)  # with CLAIM_TIMEOUT: what is proved is who wins
    config = {"harnesses": world.harnesses, "claim_timeout": CLAIM_TIMEOUT}
    task_id = world.create("b1", "Work", "--harness", "hold", "--no-spawn")
    world.ok("sync")

    theirs, teammate = teammate_clone(world, tmp_path, hub, config)
    hosts = {world.repo: (host_name(), world.socket), theirs: ("teammate", teammate)}
    try:
        starts = [
            subprocess.Popen(
                [orange_bin(), "task", "spawn", task_id, "--json"],
                cwd=path,
                env={**os.environ, **(teammate if path == theirs else {})},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for path in hosts
        ]
        outs = [start.communicate(timeout=CLAIM_TIMEOUT + 60) for start in starts]
        assert [start.returncode for start in starts] == [0, 0], outs
        said = [json.loads(out) for out, _err in outs]
        lost = [
            i for i, obj in enumerate(said) if any("not started here" in m for m in obj["messages"])
        ]
        assert len(lost) == 1, said
        loser, winner = list(hosts)[lost[0]], list(hosts)[1 - lost[0]]
        winner_host = hosts[winner][0]
        assert f"it is running on {winner_host}" in said[lost[0]]["messages"][0]
        assert said[lost[0]]["host"] == winner_host

        sockets = {world.repo: world.socket, theirs: f"{world.socket}-b"}
        assert len(sessions_on(sockets[winner])) == 1
        assert sessions_on(sockets[loser]) == []
        env = teammate if loser == theirs else {}
        rows = json.loads(run_orange("workspace", "list", "--json", cwd=loser, env=env).out)
        assert [row["task"] for row in rows["workspaces"]] == [None, None]
        shown = json.loads(run_orange("task", "show", task_id, "--json", cwd=loser, env=env).out)
        assert shown["running_on"] == winner_host

        # The winner's host goes quiet; the loser takes the task over.  At its next
        # sync the winner stops its agent, its unsaved work saved in a snapshot first.
        winner_env = teammate if winner == theirs else {}
        winner_home = Path(teammate["ORANGE_HOME"]) if winner == theirs else orange_home()
        (winner_home / "workspaces" / "proj--1" / "unsaved.txt").write_text("half done\n")
        taken = run_orange("task", "take", task_id, cwd=loser, env=env)
        assert taken.code == 0, taken.err
        assert len(sessions_on(sockets[loser])) == 1
        synced = run_orange("sync", "--json", cwd=winner, env=winner_env)
        local = json.loads(synced.out)["local"]
        assert f"task {task_id} taken by {hosts[loser][0]}: saved the work" in local[0]
        assert sessions_on(sockets[winner]) == []
        snapshot = f"refs/orange/snapshots/{task_id}/1"
        assert git(winner, "for-each-ref", "--format=%(refname)", snapshot).split() == [snapshot]
    finally:
        subprocess.run(["tmux", "-L", f"{world.socket}-b", "kill-server"], check=False)
