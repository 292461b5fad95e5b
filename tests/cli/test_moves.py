"""Status changes through the CLI (`cli` fixture, in-process), with the runtime's hook
actions replaced by the recording registry (no worktrees, no tmux)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orange.compose import Runtime
from orange.home import orange_home
from orange.store import layout
from tests.conftest import Cli, Result, git
from tests.recording import Recorder, recording_registry

PLAN = "APPROACH: small steps\nTOUCHING: src/app.py\n"
HANDOFF_1 = "DONE: first pass\nUNCERTAIN: edge cases\n"
HANDOFF_2 = "DONE: added the missing tests\n"
REVIEW_FAIL = "Verdict: FAIL\n\nMissing tests.\n"
REVIEW_PASS = "Verdict: PASS\n\nLooks good.\n"


@pytest.fixture
def rec(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """Every engine the CLI builds uses one recording registry and no runtime adapters."""
    registry, recorder = recording_registry()
    monkeypatch.setattr("orange.compose.runtime", lambda: Runtime(registry, None, None))
    return recorder


class Harness:
    """The CLI plus the project repository, with helpers for the task ref."""

    def __init__(self, cli: Cli, repo: Path, rec: Recorder) -> None:
        self.cli = cli
        self.repo = repo
        self.rec = rec

    def create(self, *args: str) -> str:
        data = self.cli.ok("task", "create", *args, "--no-spawn", "--json").json()
        assert isinstance(data, dict)
        return str(data["id"])

    def show(self, task_id: str) -> dict[str, Any]:
        data = self.cli.ok("task", "show", task_id, "--json").json()
        assert isinstance(data, dict)
        return data

    def edit(self, task_id: str, section: str, text: str) -> None:
        self.cli.ok("task", "edit", task_id, "--section", section, "--file", "-", stdin=text)

    def to(self, task_id: str, status: str) -> dict[str, Any]:
        data = self.cli.ok("task", "update", task_id, "--status", status, "--json").json()
        assert isinstance(data, dict)
        assert data["to"] == status and data["status"] == status
        return data

    def tip(self) -> str:
        return git(self.repo, "rev-parse", layout.TASKS_REF).strip()

    def rejected(self, *args: str) -> Result:
        """Run a command that must be refused: exit 1, one stderr line, nothing written."""
        before = self.tip()
        result = self.cli(*args)
        assert result.code == 1, f"{args} -> {result.code}\n{result.err}{result.out}"
        assert result.err.count("\n") == 1 and result.err.startswith("orange: "), result.err
        assert self.tip() == before
        return result

    def applied(self) -> list[tuple[str, dict[str, Any]]]:
        return [(c.action, c.params) for c in self.rec.calls if c.phase == "apply"]

    def applied_names(self) -> list[str]:
        names = self.rec.applied()
        self.rec.clear()
        return names


@pytest.fixture
def h(cli: Cli, repo: Path, rec: Recorder) -> Harness:
    cli.ok("project", "add", cwd=repo)
    return Harness(cli, repo, rec)


def drive(h: Harness, task_id: str, stop: str) -> None:
    """Drive a pending default task along the seed-000 path up to ``stop``."""
    steps: list[tuple[str, Callable[[], object]]] = [
        ("planning", lambda: h.cli.ok("task", "spawn", task_id)),
        ("planning+plan", lambda: h.edit(task_id, "Plan", PLAN)),
        ("working", lambda: h.to(task_id, "working")),
        ("working+handoff", lambda: h.edit(task_id, "Handoff", HANDOFF_1)),
        ("agent-review", lambda: h.to(task_id, "agent-review")),
        ("agent-review+fail", lambda: h.edit(task_id, "Review", REVIEW_FAIL)),
        ("working-2", lambda: h.to(task_id, "working")),
        ("working-2+handoff", lambda: h.edit(task_id, "Handoff", HANDOFF_2)),
        ("agent-review-2", lambda: h.to(task_id, "agent-review")),
        ("agent-review-2+fail", lambda: h.edit(task_id, "Review", REVIEW_FAIL)),
    ]
    for name, step in steps:
        step()
        if name == stop:
            h.rec.clear()
            return
    raise AssertionError(f"unknown stop {stop!r}")


# The seed-000 flow -------------------------------------------------------------------


def test_seed000_flow_through_the_cli(h: Harness) -> None:
    task_id = h.create("", "Add dark mode")
    assert h.show(task_id)["status"] == "pending"

    out = h.cli.ok("task", "spawn", task_id).out
    assert f"task {task_id}: pending -> planning" in out
    task = h.show(task_id)
    assert task["status"] == "planning"
    assert [(e["event"], e["from"], e["to"]) for e in task["history"][-1:]] == [
        ("status.changed", "pending", "planning")
    ]  # one commit: the move and what its actions prepared
    assert [(a, p.get("prompt")) for a, p in h.applied()] == [
        ("acquire_workspace", None),
        ("spawn_agent", "worker"),
    ]
    h.rec.clear()

    h.edit(task_id, "Plan", PLAN)
    h.to(task_id, "working")
    assert h.applied_names() == []  # the same agent session continues

    h.edit(task_id, "Handoff", HANDOFF_1)
    moved = h.to(task_id, "agent-review")
    assert moved["review_round"] == 1
    assert [(a, p.get("prompt")) for a, p in h.applied()] == [("spawn_reviewer", "reviewer")]
    h.rec.clear()

    h.edit(task_id, "Review", REVIEW_FAIL)
    h.to(task_id, "working")
    assert [(a, p.get("message")) for a, p in h.applied()] == [
        ("kill_reviewer", None),
        ("notify_worker", "review_failed"),
    ]
    h.rec.clear()

    h.edit(task_id, "Handoff", HANDOFF_2)
    moved = h.to(task_id, "agent-review")
    assert moved["review_round"] == 2
    body = h.show(task_id)["body"]
    assert "## Review (round 1)\n\nVerdict: FAIL" in body  # readable, archived
    assert "\n## Review\n" not in body  # no current review yet
    assert h.applied_names() == ["spawn_reviewer"]

    h.edit(task_id, "Review", REVIEW_PASS)
    h.to(task_id, "reviewing")
    assert h.applied_names() == ["kill_reviewer"]

    result = h.cli.ok("task", "request-changes", task_id, "--message", "Rename the flag")
    assert f"task {task_id}: reviewing -> working" in result.out
    shown = h.show(task_id)
    assert shown["status"] == "working"
    feedback = shown["body"].split("## Feedback", 1)[1]
    assert "(human):\nRename the flag" in feedback
    assert [(a, p.get("message")) for a, p in h.applied()] == [
        ("notify_worker", "changes_requested")
    ]
    h.rec.clear()

    h.cli.ok("task", "cancel", task_id, "--yes")
    final = h.show(task_id)
    assert final["status"] == "cancelled"
    assert final["workspace"] is None and final["tmux_session"] is None
    # A cancel frees the workspace, so the next queued task starts (issue 29).
    assert h.applied_names() == ["kill_session", "release_workspace", "spawn_next"]

    # Every move is one status.changed commit, in order, and nothing else was written
    # besides the creation and the body edits.
    moves = [(h["from"], h["to"]) for h in final["history"] if h["event"] == "status.changed"]
    assert moves == [
        ("pending", "planning"),
        ("planning", "working"),
        ("working", "agent-review"),
        ("agent-review", "working"),
        ("working", "agent-review"),
        ("agent-review", "reviewing"),
        ("reviewing", "working"),
        ("working", "cancelled"),
    ]
    events = {h["event"] for h in final["history"]}
    assert events == {"task.created", "task.updated", "status.changed"}


def test_move_prints_the_move_and_json_has_from_and_to(h: Harness) -> None:
    task_id = h.create("", "s")
    data = h.cli.ok("task", "spawn", task_id, "--json").json()
    assert isinstance(data, dict)
    assert (data["from"], data["to"], data["hook_errors"]) == ("pending", "planning", [])
    assert data["workspace_path"] == str(orange_home() / "workspaces" / data["workspace"])


# Rejections ----------------------------------------------------------------------------

REJECTIONS = [
    # (id, drive to, edits before the command, target, what the one line must say)
    pytest.param(
        "pending", [], "working",
        ["illegal transition pending -> working",
         "from pending you can go to: planning, cancelled"],
        id="illegal-transition-names-legal-targets",
    ),
    pytest.param(
        "planning", [], "stuck",
        ["illegal transition planning -> stuck", "working, clarification, cancelled"],
        id="escalation-target-is-not-offered",
    ),
    pytest.param(
        "agent-review+fail", [], "stuck",
        ["agent-review -> stuck not allowed", "review_round >= 2", "review_round is 1"],
        id="guard-failed-round-1-to-stuck",
    ),
    pytest.param(
        "agent-review-2+fail", [], "working",
        ["agent-review -> working not allowed", "review_round < 2", "review_round is 2"],
        id="guard-failed-round-2-to-working",
    ),
    pytest.param(
        "planning", [], "working",
        ['no "## Plan" section', 'like "APPROACH: <how you will do it>"'],
        id="gate-missing-section",
    ),
    pytest.param(
        "planning", [("Plan", "I will think about it.\n")], "working",
        ["## Plan needs a line", 'like "APPROACH: <how you will do it>"', "APPROACH/TOUCHING"],
        id="gate-missing-field",
    ),
    pytest.param(
        "working-2", [], "agent-review",
        ["## Handoff is stale", "write it again"],
        id="gate-stale-handoff",
    ),
    pytest.param(
        "agent-review", [], "reviewing",
        ['no "## Review" section', '"Verdict: PASS"'],
        id="gate-no-review",
    ),
    pytest.param(
        "agent-review", [("Review", "Looks fine to me.\n")], "reviewing",
        ['first line of ## Review must be "Verdict: PASS" or "Verdict: FAIL"'],
        id="gate-no-verdict-line",
    ),
    pytest.param(
        "agent-review+fail", [], "reviewing",
        ["## Review verdict is FAIL, this move needs PASS"],
        id="gate-wrong-verdict",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("stop", "edits", "target", "says"), REJECTIONS)
def test_rejected_move_says_why_in_one_line_and_changes_nothing(
    h: Harness,
    stop: str,
    edits: list[tuple[str, str]],
    target: str,
    says: list[str],
) -> None:
    task_id = h.create("", "reject me")
    if stop != "pending":
        drive(h, task_id, stop)
    for section, text in edits:
        h.edit(task_id, section, text)
    before = h.show(task_id)
    # As text, then as JSON: the task the second is refused from is the one the first
    # left, which must be the one before it.
    for json_out in (False, True):
        args = ["task", "update", task_id, "--status", target] + (["--json"] if json_out else [])
        result = h.rejected(*args)
        for text in says:
            assert text in result.err
        if json_out:
            error = json.loads(result.out)["error"]
            assert all(text in error for text in says)
        else:
            assert result.out == ""
        after = h.show(task_id)
        assert after["status"] == before["status"] and after["body"] == before["body"]
        assert h.rec.calls == []  # not even a hook was prepared


@pytest.mark.parametrize(
    ("stop", "target", "example"),
    [
        ("working-2", "agent-review", 'like "DONE: <what you finished>"'),
        ("agent-review+fail", "reviewing", '"Verdict: PASS"'),
    ],
    ids=["stale-handoff", "wrong-verdict"],
)
def test_every_gate_error_shows_a_valid_line(
    h: Harness, stop: str, target: str, example: str
) -> None:
    task_id = h.create("", "s")
    drive(h, task_id, stop)
    assert example in h.rejected("task", "update", task_id, "--status", target).err


def test_unknown_status_names_the_statuses(h: Harness) -> None:
    task_id = h.create("", "s")
    result = h.rejected("task", "update", task_id, "--status", "nirvana")
    assert "'nirvana' is not a status of workflow default" in result.err
    assert "pending, planning, clarification" in result.err


def test_terminal_task_cannot_move(h: Harness) -> None:
    task_id = h.create("", "s")
    h.cli.ok("task", "cancel", task_id, "--yes")
    result = h.rejected("task", "update", task_id, "--status", "planning")
    assert "cancelled task cannot move" in result.err


def test_status_cannot_be_combined_with_other_changes(h: Harness) -> None:
    task_id = h.create("", "s")
    result = h.rejected("task", "update", task_id, "--status", "planning", "--summary", "x")
    assert "cannot be combined" in result.err


# Creation: initial statuses and workflows ---------------------------------------------


@pytest.mark.parametrize("status", ["pending", "clarification", "agent-review", "reviewing"])
def test_create_accepts_the_initial_statuses(h: Harness, status: str) -> None:
    task_id = h.create("", "s", "--status", status)
    task = h.show(task_id)
    assert task["status"] == status
    assert task["workspace"] is None  # --no-spawn: nothing started
    assert h.rec.calls == []


@pytest.mark.parametrize("status", ["working", "planning", "stuck", "done", "cancelled"])
def test_create_rejects_other_statuses(h: Harness, status: str) -> None:
    h.create("first", "so that the ref exists")
    result = h.rejected("task", "create", "", "s", "--status", status, "--no-spawn")
    assert f"a default task cannot start in '{status}'" in result.err
    assert "initial statuses: pending, clarification, agent-review, reviewing" in result.err


def test_empty_summary_starts_in_clarification(h: Harness) -> None:
    task_id = h.create()
    assert h.show(task_id)["status"] == "clarification"


def test_project_workflow_minimal(h: Harness, cli: Cli) -> None:
    cli.ok("project", "update", "proj", "--workflow", "minimal")
    task_id = h.create("", "small thing")
    task = h.show(task_id)
    assert (task["workflow"], task["status"]) == ("minimal", "pending")
    assert h.show(h.create())["status"] == "pending"  # no empty_summary_status
    assert h.show(h.create("", "s", "--status", "reviewing"))["status"] == "reviewing"
    refused = h.rejected("task", "create", "", "s", "--status", "clarification", "--no-spawn")
    assert "a minimal task cannot start in 'clarification'" in refused.err
    assert "initial statuses: pending, reviewing" in refused.err
    # Minimal rules: pending -> working directly, ## Handoff to reviewing.
    h.cli.ok("task", "spawn", task_id)
    assert h.show(task_id)["status"] == "working"
    h.rejected("task", "update", task_id, "--status", "reviewing")
    h.edit(task_id, "Handoff", "all done\n")
    h.to(task_id, "reviewing")


def test_unknown_workflow_in_projects_json_fails_creation(h: Harness) -> None:
    from orange.projects import registry_path

    path = registry_path()
    data = json.loads(path.read_text())
    data["projects"][0]["workflow"] = "nope"
    path.write_text(json.dumps(data))
    result = h.cli("task", "create", "", "s", "--no-spawn")
    assert result.code == 1 and result.err.count("\n") == 1
    assert (
        'unknown workflow "nope" (known: default, fresh-worker, minimal, run-subtask, self-review)'
        in (result.err)
    )
    assert git(h.repo, "for-each-ref", "refs/orange") == ""


# Spawn and respawn ---------------------------------------------------------------------


def test_spawn_clarification_task_runs_its_entry_actions(h: Harness) -> None:
    task_id = h.create()
    assert h.show(task_id)["status"] == "clarification"
    said = h.cli.ok("task", "spawn", task_id).out
    assert f"task {task_id}: agent started in clarification" in said
    task = h.show(task_id)
    assert task["status"] == "clarification"
    assert [(a, p.get("prompt")) for a, p in h.applied()] == [
        ("acquire_workspace", None),
        ("spawn_agent", "clarification"),
    ]
    assert task["history"][-1]["event"] == "agent.spawned"
    # Started once: a second spawn refuses.
    again = h.rejected("task", "spawn", task_id)
    assert "no agent to start" in again.err


def test_spawn_agent_review_task_starts_a_reviewer_in_round_1(h: Harness) -> None:
    task_id = h.create("pr-42", "review the PR", "--status", "agent-review")
    h.cli.ok("task", "spawn", task_id)
    task = h.show(task_id)
    assert (task["status"], task["review_round"]) == ("agent-review", 1)
    assert [(a, p.get("prompt")) for a, p in h.applied()] == [
        ("acquire_workspace", None),
        ("spawn_reviewer", "reviewer"),
    ]
    # The reviewer it started can finish the round.
    h.edit(task_id, "Review", REVIEW_PASS)
    h.to(task_id, "reviewing")


def test_spawn_refuses_in_a_status_that_needs_a_human(h: Harness) -> None:
    task_id = h.create("", "s", "--status", "reviewing")
    assert "no agent to start in this status" in h.rejected("task", "spawn", task_id).err


def test_spawn_of_a_done_task_refuses(h: Harness) -> None:
    task_id = h.create("", "s")
    h.cli.ok("task", "cancel", task_id, "--yes")
    assert "nothing to spawn" in h.rejected("task", "spawn", task_id).err


@pytest.mark.parametrize(
    ("status", "says"),
    [
        ("pending", "not been started yet (start it with `orange task spawn"),
        ("reviewing", "no agent runs in that status (it moves on with `orange task update"),
        ("agent-review", "has no workspace (start it with `orange task spawn"),
        ("clarification", "has no workspace"),
    ],
    ids=["pending", "reviewing", "agent-review-not-started", "clarification-not-started"],
)
def test_respawn_refuses(h: Harness, status: str, says: str) -> None:
    task_id = h.create("", "s", "--status", status)
    assert says in h.rejected("task", "respawn", task_id).err


def test_respawn_and_attach_suggest_spawn_only_where_it_starts_an_agent(h: Harness) -> None:
    pending = h.create("", "s")
    assert h.rejected("task", "attach", pending).err == (
        f"orange: task {pending} has no running tmux session on this host "
        f"(start it with `orange task spawn {pending}`)\n"
    )
    done = h.create("", "s")
    h.cli.ok("task", "cancel", done, "--yes")
    for command in ("respawn", "attach"):
        err = h.rejected("task", command, done).err
        assert f"task {done} is cancelled: a finished task has no" in err
        assert "spawn" not in err.replace("respawn", "")


@pytest.mark.parametrize(
    ("stop", "action", "prompt", "review_round"),
    [
        ("planning", "spawn_agent", "worker_respawn", 0),
        ("working", "spawn_agent", "worker_respawn", 0),
        ("agent-review", "spawn_reviewer", "reviewer", 1),
    ],
    ids=["planning", "working", "agent-review"],
)
def test_respawn_restarts_the_agent_of_the_state(
    h: Harness, stop: str, action: str, prompt: str, review_round: int
) -> None:
    task_id = h.create("", "s")
    drive(h, task_id, stop)
    before = h.show(task_id)
    said = h.cli.ok("task", "respawn", task_id).out
    assert f"task {task_id}: agent restarted in {stop}" in said
    after = h.show(task_id)
    assert after["status"] == before["status"]
    assert after["review_round"] == review_round  # a respawn is not a new round
    assert after["agent_run"] != before["agent_run"]
    assert after["history"][-1]["event"] == "agent.respawned"
    assert [(a, p.get("prompt")) for a, p in h.applied()] == [(action, prompt)]


# Hook failures -------------------------------------------------------------------------


def test_hook_failure_after_the_write_keeps_the_move_and_asks_for_attention(
    h: Harness,
) -> None:
    task_id = h.create("", "s")
    h.rec.fail[("spawn_agent", "apply")] = "tmux exploded"
    result = h.cli("task", "spawn", task_id)
    assert result.code == 0
    assert f"task {task_id}: pending -> planning" in result.out
    assert result.err.count("\n") == 1
    assert "warning: spawn_agent: tmux exploded" in result.err
    assert f"orange task ack {task_id}" in result.err

    task = h.show(task_id)
    assert task["status"] == "planning"  # the move stands
    assert task["attention"] == "hook failed: spawn_agent: tmux exploded"
    assert [h["event"] for h in task["history"]][-2:] == ["status.changed", "hook.failed"]

    listed = h.cli.ok("task", "list", "--json").json()
    assert isinstance(listed, dict)
    assert listed["tasks"][0]["attention"] == "hook failed: spawn_agent: tmux exploded"
    assert "tmux exploded" in h.cli.ok("task", "list").out
    assert "attention: hook failed: spawn_agent: tmux exploded" in (
        h.cli.ok("task", "show", task_id).out
    )

    assert "attention cleared" in h.cli.ok("task", "ack", task_id).out
    cleared = h.show(task_id)
    assert cleared["attention"] is None and cleared["status"] == "planning"
    assert cleared["history"][-1]["event"] == "attention.cleared"
    tip = h.tip()
    h.cli.ok("task", "ack", task_id)  # nothing to clear: nothing written
    assert h.tip() == tip


def test_hook_failure_after_the_write_in_json(h: Harness) -> None:
    task_id = h.create("", "s")
    h.rec.fail[("acquire_workspace", "apply")] = "disk full"
    result = h.cli("task", "spawn", task_id, "--json")
    assert result.code == 0
    data = json.loads(result.out)
    assert data["hook_errors"] == ["acquire_workspace: disk full"]
    assert data["attention"] == "hook failed: acquire_workspace: disk full"
    # The later action still ran: failures do not stop the list.
    assert h.rec.applied() == ["acquire_workspace", "spawn_agent"]


def test_hook_failure_before_the_write_rejects_the_move(h: Harness) -> None:
    task_id = h.create("", "s")
    h.rec.fail[("acquire_workspace", "prepare")] = "the pool is full"
    result = h.rejected("task", "spawn", task_id)
    assert "the pool is full" in result.err
    task = h.show(task_id)
    assert task["status"] == "pending" and task["workspace"] is None
    assert task["attention"] is None
    assert h.rec.applied() == []  # nothing took effect


def test_hook_failure_before_the_write_of_a_later_action_rejects_too(h: Harness) -> None:
    task_id = h.create("", "s")
    drive(h, task_id, "working+handoff")
    h.rec.fail[("spawn_reviewer", "prepare")] = "no such harness"
    assert "no such harness" in h.rejected("task", "update", task_id, "--status",
                                                "agent-review").err  # fmt: skip
    task = h.show(task_id)
    assert (task["status"], task["review_round"]) == ("working", 0)  # increment not kept


# request-changes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stop",
    ["planning+plan", "agent-review+fail"],
    ids=["planning-with-plan", "agent-review-with-fail-verdict"],
)
def test_request_changes_does_not_make_the_agents_gated_move(h: Harness, stop: str) -> None:
    """Both have a legal, gated move to working; a human's feedback must not make it."""
    task_id = h.create("", "s")
    drive(h, task_id, stop)
    before = h.show(task_id)["status"]
    result = h.rejected("task", "request-changes", task_id, "--message", "more detail")
    assert f"is {before}; request-changes sends back only a task in reviewing" in result.err
    task = h.show(task_id)
    assert task["status"] == before and "## Feedback" not in task["body"]


def test_request_changes_from_stuck_where_the_workflow_allows(h: Harness, cli: Cli) -> None:
    cli.ok("project", "update", "proj", "--workflow", "self-review")
    task_id = h.create("", "s")
    h.cli.ok("task", "spawn", task_id)
    h.cli.ok("task", "stuck", task_id)
    h.rec.clear()
    h.cli.ok("task", "request-changes", task_id, "-m", "use the other API")
    task = h.show(task_id)
    assert task["status"] == "working"
    assert "use the other API" in task["body"].split("## Feedback", 1)[1]
    assert [(a, p.get("prompt")) for a, p in h.applied()] == [
        ("kill_session", None),
        ("spawn_agent", "worker_respawn"),
    ]


def test_request_changes_refused_where_there_is_no_way_back(h: Harness, cli: Cli) -> None:
    cli.ok("project", "update", "proj", "--workflow", "minimal")
    task_id = h.create("", "s", "--status", "reviewing")
    result = h.rejected("task", "request-changes", task_id, "-m", "x")
    assert f"task {task_id} is reviewing; request-changes sends back only a task in stuck" in (
        result.err
    )
    assert "## Feedback" not in h.show(task_id)["body"]


# Self-review: complete and stuck ---------------------------------------------------------


@pytest.fixture
def self_review(h: Harness, cli: Cli) -> Harness:
    cli.ok("project", "update", "proj", "--workflow", "self-review")
    return h


def test_complete_needs_no_handoff_and_records_the_outcome(self_review: Harness) -> None:
    """Seed 003 has no Handoff gate: the reported outcome is the artifact (issue 10)."""
    h = self_review
    task_id = h.create("", "implement and self-review")
    h.cli.ok("task", "spawn", task_id)
    out = h.cli.ok("task", "complete", task_id).out
    assert f"task {task_id}: working -> reviewing" in out
    task = h.show(task_id)
    assert task["status"] == "reviewing" and "## Handoff" not in task["body"]
    assert "OUTCOME: passed" in task["body"].split("## Outcome", 1)[1]


def test_a_move_to_reviewing_without_an_outcome_names_it(self_review: Harness) -> None:
    task_id = self_review.create("", "s")
    self_review.cli.ok("task", "spawn", task_id)
    result = self_review.rejected("task", "update", task_id, "--status", "reviewing")
    assert 'no "## Outcome" section' in result.err and 'like "OUTCOME: ' in result.err


def test_stuck_records_the_reason(self_review: Harness) -> None:
    task_id = self_review.create("", "s")
    self_review.cli.ok("task", "spawn", task_id)
    self_review.cli.ok("task", "stuck", task_id, "--reason", "tests need a GPU")
    task = self_review.show(task_id)
    assert task["status"] == "stuck"
    assert "tests need a GPU" in task["body"].split("## Stuck", 1)[1]


def test_complete_is_illegal_in_the_default_workflow_from_working(h: Harness) -> None:
    task_id = h.create("", "s")
    drive(h, task_id, "working+handoff")
    result = h.rejected("task", "complete", task_id)
    assert "workflow default has no move that hands it to a human" in result.err


# The committed workflow governs ----------------------------------------------------------


def test_committed_workflow_governs_old_tasks_and_edits_govern_new_ones(
    h: Harness, hermetic: Path
) -> None:
    from orange.engine.catalog import load_named

    shipped = load_named("default").source_text
    user_file = hermetic / "orange" / "workflows" / "default.yml"
    user_file.parent.mkdir(parents=True)
    user_file.write_text(shipped)
    old = h.create("old", "created under the full table")

    removed = "  - from: pending\n    to: cancelled\n    by: [human]\n    hooks: []   "
    assert removed in shipped
    edited = shipped.replace(removed, "  # (removed)")
    user_file.write_text(edited)
    new = h.create("new", "created after the edit")

    # The old task still follows the definition it was created under ...
    h.cli.ok("task", "cancel", old, "--yes")
    assert h.show(old)["status"] == "cancelled"
    # ... the new one the edited file.
    refused = h.rejected("task", "cancel", new, "--yes")
    assert "illegal transition pending -> cancelled" in refused.err
    assert "from pending you can go to: planning" in refused.err

    # Both definitions are in the ref, under the name and the name@rev.
    old_rev, new_rev = h.show(old)["workflow_rev"], h.show(new)["workflow_rev"]
    assert old_rev != new_rev
    listed = git(h.repo, "ls-tree", "-r", "--name-only", layout.TASKS_REF, "meta/workflows/")
    assert sorted(listed.split()) == [
        "meta/workflows/default.yml",
        f"meta/workflows/default@{new_rev}.yml",
    ]
    committed = git(h.repo, "show", f"{layout.TASKS_REF}:meta/workflows/default@{new_rev}.yml")
    assert committed == edited

    # Restoring the file does not change the new task's rules either.
    user_file.write_text(shipped)
    h.rejected("task", "cancel", new, "--yes")


def test_deleting_the_user_workflow_file_keeps_task_rules(h: Harness, hermetic: Path) -> None:
    """A task keeps its rules even when its workflow is no longer loadable by name."""
    from orange.engine.catalog import load_named

    user_file = hermetic / "orange" / "workflows" / "house.yml"
    user_file.parent.mkdir(parents=True)
    user_file.write_text(load_named("minimal").source_text.replace("name: minimal", "name: house"))
    h.cli.ok("project", "update", "proj", "--workflow", "house")
    task_id = h.create("", "s")
    user_file.unlink()
    h.cli.ok("task", "spawn", task_id)
    assert h.show(task_id)["status"] == "working"
