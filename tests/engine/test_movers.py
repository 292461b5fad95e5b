"""Who may take a transition (``by:``): declared, inferred with a warning, refused;
and what the shipped workflows and their prompts say about it."""

from __future__ import annotations

import re
from importlib.resources import files

import pytest

from orange.engine.caller import Caller
from orange.engine.loader import load_workflow
from orange.engine.workflow import DEFAULT_BY, Workflow
from orange.errors import WorkflowError

SHIPPED = ["default", "minimal", "fresh-worker", "self-review"]
_BY_LINE = re.compile(r"^    by: .*\n", re.MULTILINE)


def shipped_text(name: str) -> str:
    return (files("orange._workflows") / f"{name}.yml").read_text()


def shipped(name: str) -> Workflow:
    return load_workflow(shipped_text(name), f"{name}.yml")


def with_by(name: str, old: str, new: str) -> str:
    text = shipped_text(name)
    assert text.count(old) == 1, old
    return text.replace(old, new)


# the shipped workflows ----------------------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_workflows_declare_by_on_every_transition(name: str) -> None:
    text = shipped_text(name)
    workflow = shipped(name)
    assert len(_BY_LINE.findall(text)) == len(workflow.transitions)
    assert workflow.inferred_by == ()
    for t in workflow.transitions:
        if t.to in ("done", "cancelled") or t.from_ in ("reviewing", "stuck"):
            # finishing, cancelling, a human's review and leaving stuck: a human decides
            # (fresh-worker's stuck agent may send its fix to the agent review)
            agents = (
                {"worker"}
                if (name, t.from_, t.to) == ("fresh-worker", "stuck", "agent-review")
                else set()
            )
            assert set(t.by) - {"human"} == agents, (t.from_, t.to, t.by)


def test_the_default_workflow_moves() -> None:
    workflow = shipped("default")
    assert workflow.movers("stuck", "reviewing") == ("human",)
    assert workflow.movers("reviewing", "working") == ("human",)
    assert workflow.movers("reviewing", "done") == ("human",)
    assert workflow.movers("working", "stuck") == ("worker", "human")
    for target in ("reviewing", "working", "stuck"):
        assert workflow.movers("agent-review", target) == ("reviewer", "human", "engine")
    assert workflow.movers("pending", "planning") == ("human", "engine")  # spawn_next


@pytest.mark.parametrize("name", SHIPPED)
def test_prompts_ask_agents_only_for_their_own_moves(name: str) -> None:
    """Every ``--status X`` a prompt tells its agent to run is a move that agent's role
    may take, from a state the agent can be in."""
    workflow = shipped(name)
    checked = 0
    for key, role, starts in _prompt_uses(workflow):
        reachable = _reachable(workflow, starts)
        for target in _asked_moves(workflow, workflow.prompts[key]):
            allowed = [
                t for t in workflow.transitions
                if t.to == target and t.from_ in reachable and role in t.by
            ]  # fmt: skip
            assert allowed, f"{name}.yml prompts.{key} asks a {role} for --status {target}"
            checked += 1
    assert checked > 0


def _asked_moves(workflow: Workflow, prompt: str) -> list[str]:
    """The statuses a prompt tells its agent to move to (lines saying NOT are warnings,
    and "ask the human to run: ..." is a command for the human):
    ``--status X``, ``orange task complete`` (to the state handed to a human that leads
    to done) and ``orange task stuck`` (to the escalation state)."""
    targets: list[str] = []
    for line in prompt.splitlines():
        if "NOT" in line or "ask the human to run" in line.lower():
            continue
        targets += re.findall(r"--status ([a-z-]+)", line)
        if "orange task complete" in line:
            targets += [
                s for s in workflow.states
                if workflow.waits_for_human(s) and workflow.done_state in workflow.targets_from(s)
            ]  # fmt: skip
        if "orange task stuck" in line and workflow.escalation is not None:
            targets.append(workflow.escalation.to)
    return targets


def _prompt_uses(workflow: Workflow) -> list[tuple[str, str, set[str]]]:
    """(prompt, role of the agent that gets it, states it starts in)."""
    uses: list[tuple[str, str, set[str]]] = []
    hooks = [(t.to, h) for t in workflow.transitions for h in t.hooks]
    hooks += [(name, h) for name, s in workflow.states.items() for h in s.on_enter]
    for status, hook in hooks:
        if hook.action in ("spawn_agent", "spawn_reviewer"):
            review = hook.action == "spawn_reviewer" or hook.get("harness") == "review"
            uses.append((str(hook.get("prompt")), "reviewer" if review else "worker", {status}))
        elif hook.action == "notify_worker":
            uses.append((str(hook.get("message")), "worker", {status}))
    for name, state in workflow.states.items():
        if state.respawn_prompt:
            role = "reviewer" if state.agent == "reviewer" else "worker"
            if any(r == "reviewer" and name in s for _, r, s in uses):
                role = "reviewer"
            uses.append((state.respawn_prompt, role, {name}))
    return uses


def _reachable(workflow: Workflow, starts: set[str]) -> set[str]:
    seen, todo = set(starts), list(starts)
    while todo:
        for target in workflow.targets_from(todo.pop()):
            if target not in seen and not workflow.is_terminal(target):
                seen.add(target)
                todo.append(target)
    return seen


def test_the_seed_stuck_prompt_would_be_caught() -> None:
    """The check above fails on seed 000's stuck-fix step (an agent's `--status
    reviewing` out of stuck)."""
    seed = with_by(
        "default",
        "    4. Leaving stuck is the human's move (you cannot make it). When the fix is ready,\n"
        "       ask the human to run: orange task update {id} --status reviewing\n",
        "    4. When human confirms: orange task update --status reviewing\n",
    )
    workflow = load_workflow(seed, "seed.yml")
    uses = [u for u in _prompt_uses(workflow) if u[0] == "stuck_fix"]
    assert {(key, role, frozenset(starts)) for key, role, starts in uses} == {
        ("stuck_fix", "worker", frozenset({"stuck"}))
    }  # its respawn prompt, and the message entering stuck (issue 10)
    assert _asked_moves(workflow, workflow.prompts["stuck_fix"]) == ["reviewing"]
    assert "worker" not in workflow.movers("stuck", "reviewing")
    assert _asked_moves(shipped("default"), shipped("default").prompts["stuck_fix"]) == []


# loading -----------------------------------------------------------------------------------


def test_a_definition_without_by_gets_the_default_and_a_warning() -> None:
    workflow = load_workflow(_BY_LINE.sub("", shipped_text("default")), "old.yml")
    by = {(t.from_, t.to): t.by for t in workflow.transitions}
    assert by[("stuck", "reviewing")] == DEFAULT_BY == ("worker", "reviewer", "human")
    # the engine moves along exit rules and spawn_next's start, so it keeps them
    assert by[("working", "agent-review")] == (*DEFAULT_BY, "engine")
    assert by[("agent-review", "stuck")] == (*DEFAULT_BY, "engine")
    assert by[("pending", "planning")] == (*DEFAULT_BY, "engine")
    assert len(workflow.inferred_by) == len(workflow.transitions)
    assert workflow.inferred_by[18] == (
        "old.yml: transitions[18] (stuck -> reviewing): by not declared, "
        "inferred [worker, reviewer, human]"
    )


@pytest.mark.parametrize(
    ("by", "message"),
    [
        ("[worker, boss]", "transitions[18].by[1]: expected one of worker, reviewer, human, "
         "engine, got 'boss'"),
        ("[]", "transitions[18].by: list at least one of worker, reviewer, human, engine"),
        ("human", "transitions[18].by: expected a list"),
        ("[human, human]", 'transitions[18].by[1]: "human" is listed twice'),
    ],
    ids=["unknown", "empty", "not a list", "twice"],
)  # fmt: skip
def test_invalid_by_is_a_load_error(by: str, message: str) -> None:
    text = with_by(
        "default",
        "  - from: stuck\n    to: reviewing\n    by: [human]\n",
        f"  - from: stuck\n    to: reviewing\n    by: {by}\n",
    )
    with pytest.raises(WorkflowError) as caught:
        load_workflow(text, "bad.yml")
    assert str(caught.value).startswith(f"bad.yml: {message}")
    assert "\n" not in str(caught.value)


def test_an_exit_rule_along_a_move_without_engine_is_a_load_error() -> None:
    text = with_by(
        "default",
        "    to: agent-review\n    by: [worker, human, engine]\n",
        "    to: agent-review\n    by: [worker, human]\n",
    )
    with pytest.raises(WorkflowError) as caught:
        load_workflow(text, "bad.yml")
    assert str(caught.value) == (
        "bad.yml: exit_monitoring.rules[2].then: moves working -> agent-review as the "
        "engine, but transitions[7].by does not list engine; add engine there"
    )


def test_spawn_next_along_a_move_without_engine_is_a_load_error() -> None:
    text = with_by(
        "default",
        "    to: planning\n    by: [human, engine]\n",
        "    to: planning\n    by: [human]\n",
    )
    with pytest.raises(WorkflowError, match=r"spawn_next .* moves pending -> planning as the"):
        load_workflow(text, "bad.yml")


def test_request_changes_is_a_human_move() -> None:
    text = with_by(
        "default",
        "  - from: reviewing\n    to: working\n    by: [human]\n",
        "  - from: reviewing\n    to: working\n    by: [worker]\n",
    )
    assert shipped("default").request_changes_target("reviewing") == "working"
    assert load_workflow(text, "x.yml").request_changes_target("reviewing") is None


def test_escalation_is_the_engine_s_alone() -> None:
    from orange.engine.decide import resolve  # the escalation move is built there
    from orange.store.task import Task

    workflow = shipped("default")
    task = Task(fields={"id": "t1", "status": "working"}, body="")
    move = resolve(workflow, task, "stuck", escalation=True)
    assert move.by == ("engine",)
    with pytest.raises(Exception, match="is an engine move; a human may not take it"):
        Caller("human").check_move(workflow, task, move)


def test_a_respawned_reviewer_is_a_reviewer_again() -> None:
    """fresh-worker's agent-review runs its reviewer in the worker window (a
    ``spawn_agent`` with the review harness): its respawn keeps the review harness, so
    the agent keeps the reviewer's moves (``ORANGE_AGENT_ROLE=reviewer``)."""
    from orange.engine.decide import respawn_spec  # the spec the monitor respawns with

    spec = respawn_spec(shipped("fresh-worker"), "agent-review")
    assert (spec.action, spec.get("harness"), spec.get("window")) == (
        "spawn_agent",
        "review",
        "worker",
    )
    assert respawn_spec(shipped("fresh-worker"), "working").get("harness") == "task"
