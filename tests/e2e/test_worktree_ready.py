"""Two tasks in two slots of a pool with copy, setup and teardown settings and ports:
each worktree gets the copied file, its setup runs before its agent, each slot has its
own port, the agent sees it, teardown runs when the worktree is released (a failing one sets
attention and releases anyway), and the freed slot is made ready again for the next
pending task (issue 14).
"""

from __future__ import annotations

from pathlib import Path

from orange.home import orange_home
from tests.conftest import git
from tests.e2e.conftest import World, wait_for


def test_two_slots_are_made_ready_with_their_own_ports(world: World, tmp_path: Path) -> None:
    events = tmp_path / "events"
    (world.repo / ".gitignore").write_text(".env\n")
    git(world.repo, "add", ".gitignore")
    git(world.repo, "commit", "-q", "-m", "ignore local settings")
    (world.repo / ".env").write_text("SECRET=1\n")
    world.ok(
        "project", "update", "--copy", ".env", "--port-base", "4100",
        "--setup", f"echo setup $ORANGE_TASK_ID $ORANGE_PORT $(cat .env) >> {events}",
        "--teardown",  # on the task's branch still: before the worktree's reset
        f"echo teardown $ORANGE_TASK_ID $ORANGE_PORT $(git branch --show-current) >> {events}",
        "--teardown", "exit 4",
    )  # fmt: skip
    agent = f"echo agent $ORANGE_TASK_ID $ORANGE_PORT >> {events}; exec sleep 600"
    world.set_harness("port", ["sh", "-c", agent, "{prompt}"])
    first = world.create("first", "First", "--harness", "port")
    second = world.create("second", "Second", "--harness", "port")

    def lines() -> list[str]:
        return events.read_text().splitlines() if events.exists() else []

    wait_for(lambda: len(lines()) == 4, what="two setups and two agents")
    assert sorted(lines()) == sorted(
        [
            f"setup {first} 4100 SECRET=1",
            f"agent {first} 4100",
            f"setup {second} 4110 SECRET=1",
            f"agent {second} 4110",
        ]
    )
    assert lines().index(f"setup {first} 4100 SECRET=1") < lines().index(f"agent {first} 4100")
    assert lines().index(f"setup {second} 4110 SECRET=1") < lines().index(f"agent {second} 4110")
    slots = world.ok("workspace", "list", "--json").json()["workspaces"]
    assert [(s["task"], s["port"]) for s in slots] == [(first, 4100), (second, 4110)]
    listed = world.ok("workspace", "list").out.splitlines()
    assert listed[1] == f"proj--2\ttask {second} (second)\tport 4110"
    assert world.ok("task", "show", second, "--json").json()["port"] == 4110

    third = world.create("third", "Third", "--harness", "port")  # queued: the pool is full
    assert world.status(third) == "pending"

    # A cancel frees the slot (torn down first) and starts the next queued task in it
    # (spawn_next: every release starts the next, issue 29), made ready again.
    world.ok("task", "cancel", first, "--yes")
    wait_for(lambda: len(lines()) == 7, what="the teardown, the next task's setup and agent")
    assert lines()[4:] == [
        f"teardown {first} 4100 first",
        f"setup {third} 4100 SECRET=1",
        f"agent {third} 4100",
    ]
    # The failing teardown is reported on the task and does not keep the worktree.
    cancelled = world.task(first)
    assert cancelled.status == "cancelled"
    attention = cancelled.str_field("attention")
    assert "teardown command 2 of 2 exited with status 4" in attention
    # The shared record names neither the local command nor the log's path.
    assert "exit 4" not in attention and str(orange_home()) not in attention
    slots = world.ok("workspace", "list", "--json").json()["workspaces"]
    assert [s["task"] for s in slots] == [third, second]
    log = orange_home() / "logs" / "worktrees" / "proj" / f"{first}.log"
    assert "teardown of task" in log.read_text()


def test_a_task_branch_starts_from_its_base(world: World) -> None:
    git(world.repo, "checkout", "-q", "-b", "release")
    (world.repo / "RELEASE").write_text("1.0\n")
    git(world.repo, "add", "RELEASE")
    git(world.repo, "commit", "-q", "-m", "release 1.0")
    git(world.repo, "checkout", "-q", "main")
    world.set_harness("hold", ["sh", "-c", "exec sleep 600", "{prompt}"])
    task_id = world.create("fix", "Fix", "--harness", "hold", "--base", "release")
    task = world.task(task_id)
    assert task.str_field("base") == "release"
    worktree = Path(world.ok("task", "show", task_id, "--json").json()["workspace_path"])
    assert git(worktree, "rev-parse", "HEAD") == git(world.repo, "rev-parse", "release")
    assert (worktree / "RELEASE").is_file()


def test_the_reviewer_gets_its_slots_port(world: World, tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    world.ok("project", "update", "--port-base", "4200")
    agent = f"echo $ORANGE_AGENT_ROLE $ORANGE_PORT >> {seen}; exec sleep 600"
    world.set_harness("port", ["sh", "-c", agent, "{prompt}"], ["sh", "-c", agent])
    world.create("held", "Held", "--harness", "port")  # slot 1: 4200
    reviewed = world.create("review", "Review", "--harness", "port", "--status", "agent-review")
    wait_for(lambda: seen.exists() and len(seen.read_text().splitlines()) == 2, what="agents")
    assert sorted(seen.read_text().splitlines()) == ["reviewer 4210", "worker 4200"]
    assert world.ok("task", "show", reviewed, "--json").json()["port"] == 4210


def test_a_base_only_on_origin_is_fetched_at_create(world: World, tmp_path: Path) -> None:
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(world.repo, "remote", "add", "origin", str(bare))
    git(world.repo, "push", "-q", "-u", "origin", "main")
    teammate = tmp_path / "teammate"
    git(tmp_path, "clone", "-q", str(bare), str(teammate))
    git(teammate, "checkout", "-q", "-b", "release")
    (teammate / "RELEASE").write_text("1.0\n")
    git(teammate, "add", "RELEASE")
    git(teammate, "commit", "-q", "-m", "release 1.0")
    git(teammate, "push", "-q", "origin", "release")
    pushed = git(teammate, "rev-parse", "release")
    world.set_harness("hold", ["sh", "-c", "exec sleep 600", "{prompt}"])
    task_id = world.create("fix", "Fix", "--harness", "hold", "--base", "release")
    worktree = Path(world.ok("task", "show", task_id, "--json").json()["workspace_path"])
    assert git(worktree, "rev-parse", "HEAD") == pushed
