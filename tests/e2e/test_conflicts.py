"""Conflicts predicted before anyone merges (issue 29): two scripted agents editing
the same file of a real repository are shown as conflicting while both still work;
merging the second after the first is refused in one line naming the file, and
``orange task rebase`` has its agent bring the branch up to date, after which it merges."""

from __future__ import annotations

import json

from tests.conftest import git
from tests.e2e.conftest import AGENT, World, wait_for


def test_two_agents_on_one_file_conflict_before_either_finishes(world: World) -> None:
    world.set_harness(
        "editing",
        [*AGENT, "--role", "worker", "--edit", "shared.txt", "--hold", "{prompt}"],
        [*AGENT, "--role", "reviewer", "--reviews", "PASS", "{prompt}"],
    )
    first = world.create("first", "First edit", "--harness", "editing")
    second = world.create("second", "Second edit", "--harness", "editing")

    def conflicting() -> dict[str, list[dict[str, object]]] | None:
        listed = json.loads(world.ok("task", "list", "--json").out)["tasks"]
        found = {t["id"]: t.get("conflicts", []) for t in listed}
        return found if found.get(first) and found.get(second) else None

    found = wait_for(conflicting, 90, "both tasks shown as conflicting")
    assert found[first] == [{"task": second, "branch": "second", "files": ["shared.txt"]}]
    assert found[second] == [{"task": first, "branch": "first", "files": ["shared.txt"]}]
    assert world.status(first) == world.status(second) == "working"  # neither finished
    table = {line.split()[0]: line for line in world.ok("task", "list").out.splitlines()}
    assert "CONFLICTS" in table["ID"]
    assert f"task {second} (second) on shared.txt" in table[first]
    shown = world.ok("task", "show", first).out
    assert f"would conflict with task {second} (second) on shared.txt" in shown
    assert json.loads(world.ok("task", "show", second, "--json").out)["conflicts"] == found[second]

    for task_id in (first, second):  # let both agents hand off
        session = world.task(task_id).str_field("tmux_session")
        world.tmux("send-keys", "-t", f"={session}:worker", "go", "Enter")
    world.wait_status(first, "reviewing")
    world.wait_status(second, "reviewing")
    world.ok("task", "merge", first, "--local")

    refused = world.orange("task", "merge", second, "--local")
    assert refused.code == 1
    line = refused.err.strip()
    assert "\n" not in line
    assert line.startswith(f"orange: task {second} would conflict with main on shared.txt (")
    assert f"`orange task rebase {second}`" in line
    assert world.status(second) == "reviewing"
    assert "second" not in git(world.repo, "log", "--format=%s", "main")

    world.ok("task", "rebase", second)
    world.wait_status(second, "reviewing")
    assert "conflicts" not in json.loads(world.ok("task", "show", second, "--json").out)
    world.ok("task", "merge", second, "--local")
    assert world.status(second) == "done"
    merged = git(world.repo, "show", "main:shared.txt")
    assert "(first)" in merged and "(second)" in merged
