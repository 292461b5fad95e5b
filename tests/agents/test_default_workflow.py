"""The default workflow with each real program: plan, work, an agent review that
fails, the fix, a review that passes, a human's merge."""

from __future__ import annotations

import pytest

from orange.store import layout
from tests.agents.conftest import settle
from tests.agents.modelserver import USAGE, ModelServer
from tests.conftest import git
from tests.e2e.conftest import World, commits_on

WAIT = 240.0  # a deadline, not a pause: a real program on a loaded machine
# Tokens one answer of the scripted model counts in Orange's ledger (`USAGE`): Claude
# Code's session keeps input, cache reads and cache writes apart; codex's its input with
# the cached part inside (Orange counts it once, as cache) and no cache writes.
SENT = {
    "claude": {
        "in": USAGE["input"],
        "out": USAGE["output"],
        "cache": USAGE["cache_read"] + USAGE["cache_write"],
    },
    "codex": {"in": USAGE["input"], "out": USAGE["output"], "cache": USAGE["cache_read"]},
}
SLOW = {"opencode": 1200.0}  # opencode: ~10 min for this flow at a load of 20 on 2 cores


def run_to_done(agents: World, model: ModelServer, harness: str, review: str | None) -> None:
    settle(agents.repo)
    model.script.verdicts["feature-a"] = ["FAIL", "PASS"]
    extra = ["--review-harness", review] if review else []
    task_id = agents.create("feature-a", "Add feature A", "--harness", harness, *extra)
    task = agents.wait_status(task_id, "reviewing", timeout=SLOW.get(harness, WAIT))
    assert task.int_field("review_round") == 2
    assert "Verdict: FAIL" in task.body and "Verdict: PASS" in task.body
    # The agent's own commits, made by the program's shell tool in the worktree.
    assert commits_on(agents.repo, "feature-a")[:2] == ["Fix review findings", "Add feature"]
    agents.ok("task", "merge", task_id, "--local")
    assert agents.status(task_id) == "done"
    # Each line written by the agent's shell, which ran with this task's environment.
    merged = (agents.repo / "feature.txt").read_text()
    assert merged == f"feature by {task_id}\nfix by {task_id}\n"
    trail = git(agents.repo, "log", "--reverse", "--format=%s", layout.TASKS_REF).splitlines()
    moves = [s.split(": ", 1)[1] for s in trail if " -> " in s]
    assert moves == ["pending -> planning", "planning -> working", "working -> agent-review",
                     "agent-review -> working", "working -> agent-review",
                     "agent-review -> reviewing", "reviewing -> done"]  # fmt: skip
    actors = git(agents.repo, "log", "--format=%(trailers:key=Orange-Actor,valueonly)",
                 layout.TASKS_REF)  # fmt: skip
    assert actors.split().count("agent") >= 5  # every move but the first and the merge
    # Every hook took effect: the failed review's notice was taken by the worker at
    # once, never found still in its input box (Orange reads that off the screen).
    events = git(agents.repo, "log", "--format=%(trailers:key=Orange-Event,valueonly)",
                 layout.TASKS_REF)  # fmt: skip
    assert "hook.failed" not in events.split()
    if harness in SENT and review in (None, harness):
        # The ledger (issue 30): what Orange recorded is exactly what the model
        # reported, answer by answer, each in its column.  Red when an agent Orange
        # ended after its move (the reviewers) could still ask the model once more and
        # die before writing the answer (Claude Code did, 1 of 9), or when a move missed
        # the call that asked for it (codex writes its running total after the tool).
        tokens = agents.task(task_id).fields.get("tokens")
        answered = model.turns_answered()
        assert tokens == {k: v * answered for k, v in SENT[harness].items()}, (
            f"{tokens} recorded for {answered} answers"
        )


@pytest.mark.parametrize("harness", ["claude", "codex", "opencode", "pi"])
def test_default_workflow_with_a_fail_round(
    agents: World, model: ModelServer, harness: str
) -> None:
    run_to_done(agents, model, harness, review=None)


def test_claude_worker_with_a_codex_reviewer(agents: World, model: ModelServer) -> None:
    run_to_done(agents, model, "claude", review="codex")
