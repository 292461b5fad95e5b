"""Status roles as workflow data: declared, inferred, refused; request-changes targets."""

from __future__ import annotations

import re
from importlib.resources import files
from typing import Any

import pytest
import yaml

from orange.engine.loader import load_workflow
from orange.engine.workflow import Workflow

SHIPPED = ["default", "minimal", "fresh-worker", "self-review"]

# What every shipped workflow declares: queue, done, cancelled, and who waits for a human.
WAITING = {
    "default": {"clarification", "reviewing", "stuck"},
    "minimal": {"reviewing", "stuck"},
    "fresh-worker": {"clarification", "reviewing", "stuck"},
    "self-review": {"reviewing", "stuck"},
}
_DECLARATION = re.compile(r"^ +(role|waits_for_human): .*\n", re.MULTILINE)


def shipped_text(name: str) -> str:
    return (files("orange._workflows") / f"{name}.yml").read_text()


def shipped(name: str) -> Workflow:
    return load_workflow(shipped_text(name), f"{name}.yml")


def waiting(workflow: Workflow) -> set[str]:
    return {name for name in workflow.states if workflow.waits_for_human(name)}


# shipped workflows -----------------------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_workflows_declare_every_role(name: str) -> None:
    text = shipped_text(name)
    assert _DECLARATION.search(text)
    workflow = shipped(name)
    assert workflow.inferred_roles == ()
    assert workflow.queue_state == "pending"
    assert workflow.done_state == "done"
    assert workflow.cancelled_state == "cancelled"
    assert workflow.terminal_states == frozenset({"done", "cancelled"})
    assert waiting(workflow) == WAITING[name]
    assert workflow.states["pending"].role == "queue"


@pytest.mark.parametrize("name", SHIPPED)
def test_an_undeclared_copy_infers_what_the_shipped_file_declares(name: str) -> None:
    """Copies committed before roles existed (and users' files) keep loading, alike."""
    text, count = _DECLARATION.subn("", shipped_text(name))
    assert count == 3 + len(WAITING[name])
    old = load_workflow(text, f"refs/{name}.yml")
    new = shipped(name)
    assert (old.queue_state, old.done_state, old.cancelled_state) == (
        new.queue_state,
        new.done_state,
        new.cancelled_state,
    )
    assert waiting(old) == waiting(new)
    assert {s: old.request_changes_target(s) for s in old.states} == {
        s: new.request_changes_target(s) for s in new.states
    }
    expected = [
        f"refs/{name}.yml: states.pending: role not declared, inferred 'queue'",
        f"refs/{name}.yml: states.cancelled: role not declared, inferred 'cancelled'",
        f"refs/{name}.yml: states.done: role not declared, inferred 'done'",
    ]
    expected += [
        f"refs/{name}.yml: states.{state}: waits_for_human not declared, inferred true"
        for state in new.states
        if state in WAITING[name]
    ]
    assert list(old.inferred_roles) == expected


# request-changes -------------------------------------------------------------------------


def test_request_changes_target_in_default() -> None:
    workflow = shipped("default")
    assert workflow.request_changes_target("reviewing") == "working"
    # stuck -> working (added to seed 000) sends back; stuck -> reviewing hands over.
    assert workflow.request_changes_target("stuck") == "working"
    # clarification -> planning is the agent's own move after the discussion.
    assert workflow.request_changes_target("clarification") is None
    for status in ("pending", "planning", "working", "agent-review", "done", "nowhere"):
        assert workflow.request_changes_target(status) is None, status


@pytest.mark.parametrize(
    ("name", "targets"),
    [
        ("minimal", {"stuck": "working"}),
        # stuck -> agent-review starts a reviewer (harness review), not the worker.
        ("fresh-worker", {"stuck": "working"}),
        ("self-review", {"stuck": "working"}),
    ],
)
def test_request_changes_target_in_other_shipped(name: str, targets: dict[str, str]) -> None:
    workflow = shipped(name)
    found = {s: workflow.request_changes_target(s) for s in workflow.states}
    assert {s: t for s, t in found.items() if t} == targets


# user workflows with other names ---------------------------------------------------------


def renamed(declare: bool) -> dict[str, Any]:
    """A workflow whose states are named unlike the shipped ones."""
    states: dict[str, Any] = {
        "backlog": {"role": "queue"},
        "building": {"respawn_prompt": "build"},
        "inspection": {"agent": "worker", "waits_for_human": True},
        "shipped": {"terminal": True, "role": "done"},
        "dropped": {"terminal": True, "role": "cancelled"},
    }
    if not declare:
        for state in states.values():
            state.pop("role", None)
            state.pop("waits_for_human", None)
    release = [{"action": "kill_session"}, {"action": "release_workspace"}]
    return {
        "name": "house",
        "version": 1,
        "states": states,
        "transitions": [
            {
                "from": "backlog",
                "to": "building",
                "hooks": [
                    {"action": "acquire_workspace"},
                    {"action": "spawn_agent", "prompt": "build"},
                ],
            },
            {"from": "building", "to": "inspection", "gate": {"section": "## Handoff"}},
            {
                "from": "inspection",
                "to": "building",
                "hooks": [{"action": "notify_worker", "message": "again"}],
            },
            {"from": "inspection", "to": "shipped", "hooks": release},
            {"from": "inspection", "to": "dropped", "hooks": release},
            {"from": "building", "to": "dropped", "hooks": release},
            {"from": "backlog", "to": "dropped"},
        ],
        "exit_monitoring": {"rules": [{"status": "inspection", "action": "mark_dead"}]},
        "prompts": {"build": "Build {summary}", "again": "Read ## Feedback"},
    }


def test_renamed_states_with_declared_roles() -> None:
    workflow = load_workflow(yaml.safe_dump(renamed(declare=True)), "house.yml")
    assert workflow.inferred_roles == ()
    assert workflow.queue_state == "backlog"
    assert workflow.done_state == "shipped"
    assert workflow.cancelled_state == "dropped"
    assert workflow.terminal_states == frozenset({"shipped", "dropped"})
    assert waiting(workflow) == {"inspection"}
    assert workflow.request_changes_target("inspection") == "building"
    assert workflow.request_changes_target("building") is None


def test_renamed_states_without_declarations_infer_what_they_can() -> None:
    workflow = load_workflow(yaml.safe_dump(renamed(declare=False)), "house.yml")
    assert workflow.queue_state == "backlog"  # the initial state that spawns an agent
    assert waiting(workflow) == {"inspection"}  # the monitor only marks its agent dead
    # Two terminal states are reached with release_workspace and none is named done or
    # cancelled: nothing is guessed, and the warnings say so.
    assert workflow.done_state is None
    assert workflow.cancelled_state is None
    assert workflow.inferred_roles == (
        "house.yml: states.backlog: role not declared, inferred 'queue'",
        "house.yml: states: no state has role 'done' (none declared, none inferred)",
        "house.yml: states: no state has role 'cancelled' (none declared, none inferred)",
        "house.yml: states.inspection: waits_for_human not declared, inferred true",
    )
    assert workflow.request_changes_target("inspection") == "building"


def test_done_is_inferred_from_the_release_move_when_no_state_is_named_done() -> None:
    data = renamed(declare=False)
    data["states"]["dropped"]["role"] = "cancelled"
    workflow = load_workflow(yaml.safe_dump(data), "house.yml")
    assert workflow.done_state == "shipped"
    assert "house.yml: states.shipped: role not declared, inferred 'done'" in (
        workflow.inferred_roles
    )


def test_declared_roles_are_never_overridden_by_inference() -> None:
    data = renamed(declare=True)
    # A terminal state named done and a state named pending do not take the roles the
    # file gave to other states; one waits_for_human declaration stops that inference.
    data["states"]["done"] = {"terminal": True}
    data["states"]["pending"] = {}
    data["transitions"].append({"from": "inspection", "to": "done"})
    data["transitions"].append({"from": "pending", "to": "dropped"})
    workflow = load_workflow(yaml.safe_dump(data), "house.yml")
    assert (workflow.queue_state, workflow.done_state, workflow.cancelled_state) == (
        "backlog",
        "shipped",
        "dropped",
    )
    assert waiting(workflow) == {"inspection"}
    assert workflow.inferred_roles == ()


def test_request_changes_skips_moves_that_are_not_a_send_back_to_the_worker() -> None:
    data = renamed(declare=True)
    data["states"]["hold"] = {"waits_for_human": True, "agent": "worker"}
    data["states"]["audit"] = {"agent": "reviewer"}
    data["states"]["rework"] = {"respawn_prompt": "build"}
    data["states"]["redo"] = {"respawn_prompt": "build"}
    data["states"]["scrapped"] = {"terminal": True}
    notify = [{"action": "notify_worker", "message": "again"}]
    # Listed before the real send-back (inspection -> building), each one clause off:
    data["transitions"][2:2] = [
        {"from": "inspection", "to": "hold", "hooks": notify},  # target waits for a human
        {"from": "inspection", "to": "audit", "hooks": notify},  # target's agent: reviewer
        {"from": "inspection", "to": "scrapped", "hooks": notify},  # target is terminal
        {  # starts a reviewer, not the worker
            "from": "inspection",
            "to": "rework",
            "hooks": [{"action": "spawn_agent", "prompt": "build", "harness": "review"}],
        },
        {"from": "inspection", "to": "redo"},  # wakes nobody: the agent's own move
    ]
    workflow = load_workflow(yaml.safe_dump(data), "house.yml")
    assert workflow.request_changes_target("inspection") == "building"
    # The same moves out of a state nobody waits in are never a human's send-back.
    data["states"]["inspection"]["waits_for_human"] = False
    workflow = load_workflow(yaml.safe_dump(data), "house.yml")
    assert workflow.request_changes_target("inspection") is None


@pytest.mark.parametrize(("queue", "inferred"), [("pending", "pending"), ("backlog", None)])
def test_queue_falls_back_to_a_state_named_pending(queue: str, inferred: str | None) -> None:
    data = renamed(declare=False)
    data["states"] = {queue if k == "backlog" else k: v for k, v in data["states"].items()}
    for t in data["transitions"]:
        t["from"] = queue if t["from"] == "backlog" else t["from"]
    data["transitions"][0]["hooks"] = [{"action": "acquire_workspace"}]  # spawns nothing
    workflow = load_workflow(yaml.safe_dump(data), "house.yml")
    assert workflow.queue_state == inferred


def test_an_initial_state_that_runs_an_agent_is_not_the_queue() -> None:
    data = renamed(declare=False)
    spawn = [{"action": "acquire_workspace"}, {"action": "spawn_agent", "prompt": "build"}]
    data["states"]["drafting"] = {"respawn_prompt": "build", "on_enter": spawn}
    data["initial_statuses"] = ["drafting", "backlog"]
    data["transitions"].append({"from": "drafting", "to": "building", "hooks": spawn[1:]})
    workflow = load_workflow(yaml.safe_dump(data), "house.yml")
    assert workflow.queue_state == "backlog"
