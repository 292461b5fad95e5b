"""Budgets with a real tmux agent: a scripted agent that keeps spending (it records
model calls in Claude Code's session format) is stopped once its task's cost passes
the budget given at `task create --budget`; its worktree, and so its work, stays, and
a person who raises the budget sends it back to work, where it goes on."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import yaml

from orange.engine.ledger import cost_of
from orange.home import orange_home
from orange.monitor import loop as monitor_loop
from orange.runtime.bindings import workspace_of
from orange.runtime.usage import claude_dir
from tests.e2e.conftest import AGENT, World, wait_for


def _spender(world: World, tokens: int) -> None:
    # A user's harness naming the built-in reader of the format its program writes.
    world.harnesses["spender"] = {
        "command": [*AGENT, "--spend", str(tokens), "{prompt}"],
        "usage": "claude",
    }
    (orange_home() / "config.yml").write_text(yaml.safe_dump({"harnesses": world.harnesses}))


def _calls(worktree: Path) -> int:
    folder = Path.home() / ".claude" / "projects" / claude_dir(str(worktree))
    return sum(len(p.read_text().splitlines()) for p in folder.glob("*.jsonl"))


def _worker_dead(world: World, session: str) -> bool:
    shown = world.tmux("list-panes", "-t", f"={session}:worker", "-F", "#{pane_dead}")
    return shown.strip() == "1"


def test_a_runaway_agent_is_stopped_at_its_budget(world: World) -> None:
    _spender(world, 100_000)  # claude-sonnet-4-5: $1.50 a call
    task_id = world.create("spend", "Spend without end", "--harness", "spender", "--budget", "5")
    task = world.task(task_id)
    assert task.fields["budget_usd"] == "5.00"
    worktree = wait_for(lambda: workspace_of(world.task(task_id)), 20, "a worktree")
    wait_for(lambda: _calls(worktree) >= 4, 30, "four model calls ($6.00)")
    session = world.task(task_id).str_field("tmux_session")
    assert session and world.tmux("has-session", "-t", session) == ""

    monitor_loop.run_pass()  # the monitor's look at a live agent's spending
    stopped = world.wait_status(task_id, "stuck", timeout=20)
    assert stopped.str_field("attention").startswith("budget of $5.00 spent ($")
    assert cost_of(stopped.fields) > Decimal(5)
    assert stopped.fields["tokens"]["out"] >= 400_000
    wait_for(lambda: _worker_dead(world, session), 10, "the agent stopped")
    assert worktree.is_dir() and stopped.str_field("workspace")  # the work is kept
    assert stopped.str_field("tmux_session") == session  # its pane shows how it ended
    calls = _calls(worktree)
    monitor_loop.run_pass()
    assert _calls(worktree) == calls  # no agent spends any more

    # The stopped agent's death keeps the reason and says how to go on; a respawn is
    # refused while the budget stays spent (it would start the runaway again).  The
    # death is recorded by this pass or by the project's own monitor, whichever takes
    # the task's lock first (the other leaves it alone): waited for, not assumed.
    def how_to_go_on() -> str | None:
        attention = world.task(task_id).str_field("attention")
        return attention if "--budget" in attention else None

    attention = wait_for(how_to_go_on, 20, "the death recorded with how to go on")
    assert attention.startswith("budget of $5.00 spent ($")
    refused = world.orange("task", "respawn", task_id)
    assert refused.code == 1 and "budget of $5.00 spent" in refused.err
    assert world.task(task_id).status == "stuck" and _worker_dead(world, session)

    # Going on: the person raises the budget and sends the task back to work, as the
    # stop's notice says: `task update ID --budget 50`, then `task request-changes ID`.
    world.ok("task", "update", task_id, "--budget", "50")
    world.ok("task", "request-changes", task_id, "-m", "Go on; the budget is $50 now.")
    resumed = world.wait_status(task_id, "working", timeout=20)
    assert resumed.fields["budget_usd"] == "50.00" and not resumed.str_field("attention")
    wait_for(lambda: _calls(worktree) >= calls + 2, 30, "the agent spending again")
    monitor_loop.run_pass()  # within the new budget: the agent works on
    assert world.task(task_id).status == "working" and not _worker_dead(world, session)


def test_a_budget_that_is_no_amount_is_refused(world: World) -> None:
    result = world.orange("task", "create", "x", "Anything", "--budget", "lots")
    assert result.code == 1
    assert "budget 'lots' is not an amount of dollars" in result.err
    assert json.loads(world.ok("task", "list", "--json").out) == {"tasks": []}


def test_a_tasks_budget_is_taken_off_with_off(world: World) -> None:
    task_id = world.create("x", "Anything", "--no-spawn", "--budget", "5")
    assert world.task(task_id).fields["budget_usd"] == "5.00"
    world.ok("task", "update", task_id, "--budget", "off")
    fields = world.task(task_id).fields
    assert "budget_usd" not in fields
    assert "workspace" in fields and fields["workspace"] is None  # only the budget goes
