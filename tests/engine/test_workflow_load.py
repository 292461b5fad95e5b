"""Loading and validating workflow files: seed 001's nine rules, keys, actions, params."""

from __future__ import annotations

import copy
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from orange.engine.actionspec import ACTION_PARAMS
from orange.engine.loader import load_workflow, load_workflow_file
from orange.engine.workflow import HookSpec, Transition
from orange.errors import WorkflowError

SHIPPED = ["default", "minimal", "fresh-worker", "self-review"]


def base() -> dict[str, Any]:
    """A small valid workflow every broken case starts from."""
    return {
        "name": "broken",
        "version": 1,
        "escalation": {"to": "stuck"},
        "states": {
            "pending": {},
            "working": {"respawn_prompt": "worker"},
            "review": {},
            "stuck": {},
            "done": {"terminal": True},
        },
        "transitions": [
            {
                "from": "pending",
                "to": "working",
                "hooks": [
                    {"action": "acquire_workspace"},
                    {"action": "spawn_agent", "prompt": "worker"},
                ],
            },
            {"from": "working", "to": "review", "gate": {"section": "## Handoff"}},
            {"from": "review", "to": "working", "when": "review_round < 2"},
            {"from": "review", "to": "stuck", "when": "review_round >= 2"},
            {"from": "review", "to": "done", "hooks": [{"action": "kill_session"}]},
        ],
        "exit_monitoring": {
            "rules": [
                {"status": "working", "has_artifact": {"section": "## Handoff"}, "then": "review"},
                {"status": "working", "no_artifact": True, "action": "crash", "stuck_after": 2},
                {
                    "status": "review",
                    "has_artifact": {"section": "## Review", "verdict": "FAIL"},
                    "then_when": [
                        {"when": "review_round < 2", "then": "working"},
                        {"when": "review_round >= 2", "then": "stuck"},
                    ],
                },
            ]
        },
        "prompts": {"worker": "Do {summary}"},
    }


def write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "broken.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_base_is_valid(tmp_path: Path) -> None:
    workflow = load_workflow_file(write(tmp_path, base()))
    assert workflow.name == "broken"
    assert list(workflow.states) == ["pending", "working", "review", "stuck", "done"]
    assert workflow.initial_statuses == ("pending",)
    spawn = workflow.transitions[0].hooks[1]
    assert dict(spawn.params) == {
        "prompt": "worker",
        "harness": "task",
        "permissions": "full",
        "window": "worker",
    }


Mutate = Callable[[dict[str, Any]], None]


class Broken(NamedTuple):
    id: str
    mutate: Mutate
    key_path: str
    says: str


def _set(path: str, value: object) -> Mutate:
    """Set a value at a dotted path with [i] indexes (``transitions[1].to``)."""

    def mutate(data: dict[str, Any]) -> None:
        node: Any = data
        parts = path.replace("[", ".").replace("]", "").split(".")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node[part]
        last = parts[-1]
        if last.isdigit():
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _append(key: str, value: object) -> Mutate:
    return lambda data: data[key].append(value)


def _rules_append(value: object) -> Mutate:
    return lambda data: data["exit_monitoring"]["rules"].append(value)


RULES = [
    Broken(
        "rule 1: unknown to",
        _set("transitions[1].to", "reviw"),
        "transitions[1].to",
        'unknown state "reviw" (states: pending, working, review, stuck, done); '
        'did you mean "review"?',
    ),
    Broken(
        "rule 2: unknown from",
        _set("transitions[0].from", "pendng"),
        "transitions[0].from",
        'unknown state "pendng"',
    ),
    Broken(
        "rule 3: transition out of terminal",
        _append("transitions", {"from": "done", "to": "working"}),
        "transitions[5].from",
        '"done" is terminal; no transition may leave it',
    ),
    Broken(
        "rule 4: unknown hook prompt",
        _set("transitions[0].hooks[1].prompt", "wrker"),
        "transitions[0].hooks[1].prompt",
        'unknown prompt "wrker" (prompts: worker); did you mean "worker"?',
    ),
    Broken(
        "rule 5: unknown respawn_prompt",
        _set("states.working.respawn_prompt", "resume"),
        "states.working.respawn_prompt",
        'unknown prompt "resume"',
    ),
    Broken(
        "rule 6: unknown then target",
        _set("exit_monitoring.rules[0].then", "nowhere"),
        "exit_monitoring.rules[0].then",
        'unknown state "nowhere"',
    ),
    Broken(
        "rule 7: overlapping when",
        _append("transitions", {"from": "review", "to": "working", "when": "review_round <= 1"}),
        "transitions[5].when",
        "ambiguous with transitions[2] (review -> working): both hold when review_round=0",
    ),
    Broken(
        "rule 8: when does not parse",
        _set("transitions[2].when", "review_round =< 2"),
        "transitions[2].when",
        'unknown operator "=<"',
    ),
    Broken(
        "rule 9: then_when not exhaustive",
        _set("exit_monitoring.rules[2].then_when[1].when", "review_round > 2"),
        "exit_monitoring.rules[2].then_when",
        "not exhaustive: no branch holds when review_round=2",
    ),
]

OTHERS = [
    Broken(
        "unknown top-level key",
        _set("transition", []),
        "transition",
        "unknown key (known: name, version,",
    ),
    Broken(
        "unknown state key",
        _set("states.working", {"respawn_promt": "worker"}),
        "states.working.respawn_promt",
        'did you mean "respawn_prompt"?',
    ),
    Broken(
        "unknown gate key",
        _set("transitions[1].gate", {"section": "## Handoff", "feilds": ["DONE"]}),
        "transitions[1].gate.feilds",
        "unknown key (known: section, required, fields, verdict)",
    ),
    Broken(
        "unknown action",
        _set("transitions[0].hooks[1]", {"action": "spwan_agent", "prompt": "worker"}),
        "transitions[0].hooks[1].action",
        'unknown action "spwan_agent" (known: acquire_workspace,',
    ),
    Broken(
        "unknown action param",
        _set("transitions[0].hooks[1].promt", "worker"),
        "transitions[0].hooks[1].promt",
        "unknown parameter of spawn_agent (known: prompt, harness, permissions, increment, "
        'window); did you mean "prompt"?',
    ),
    Broken(
        "param on parameterless action",
        _set("transitions[4].hooks[0].force", True),
        "transitions[4].hooks[0].force",
        "unknown parameter of kill_session (it takes no parameters)",
    ),
    Broken(
        "bad param choice",
        _set("transitions[0].hooks[1].harness", "both"),
        "transitions[0].hooks[1].harness",
        "expected one of task, review, got 'both'",
    ),
    Broken(
        "missing required param",
        _set("transitions[0].hooks[1]", {"action": "spawn_reviewer"}),
        "transitions[0].hooks[1].prompt",
        "spawn_reviewer needs this parameter",
    ),
    Broken(
        "run_command argv empty",
        _set("transitions[4].hooks[0]", {"action": "run_command", "argv": []}),
        "transitions[4].hooks[0].argv",
        "non-empty list of strings",
    ),
    Broken(
        "set_field of a branch to what git would read as an option",
        _set(
            "transitions[4].hooks[0]",
            {"action": "set_field", "field": "branch", "value": "--receive-pack=/x"},
        ),
        "transitions[4].hooks[0].value",
        "branch ",
    ),
    Broken(
        "set_field of a field the host owns",
        _set(
            "transitions[4].hooks[0]", {"action": "set_field", "field": "workspace", "value": "x"}
        ),
        "transitions[4].hooks[0].field",
        '"workspace" is set by the host that runs the task',
    ),
    Broken(
        "increment of a text field",
        _set("transitions[4].hooks[0]", {"action": "increment", "field": "summary"}),
        "transitions[4].hooks[0].field",
        '"summary" is not a count (increment counts)',
    ),
    Broken(
        "increment of a protected field",
        _set("transitions[4].hooks[0]", {"action": "increment", "field": "status"}),
        "transitions[4].hooks[0].field",
        '"status" is changed only by the engine',
    ),
    Broken(
        "notify_worker message is a prompt key",
        _set("transitions[2].hooks", [{"action": "notify_worker", "message": "fix it"}]),
        "transitions[2].hooks[0].message",
        'unknown prompt "fix it"',
    ),
    Broken(
        "duplicate transitions without when",
        _append("transitions", {"from": "review", "to": "done"}),
        "transitions[5]",
        'duplicates transitions[4] (review -> done); give them exclusive "when" clauses',
    ),
    Broken(
        "then_when branches overlap",
        _set("exit_monitoring.rules[2].then_when[1].when", "review_round >= 1"),
        "exit_monitoring.rules[2].then_when[1].when",
        "overlaps then_when[0]: both hold when review_round=1",
    ),
    Broken(
        "then without a transition",
        _set("exit_monitoring.rules[0].then", "done"),
        "exit_monitoring.rules[0].then",
        "no transition from working to done",
    ),
    Broken(
        "crash without stuck_after",
        _set("exit_monitoring.rules[1]", {"status": "working", "action": "crash"}),
        "exit_monitoring.rules[1].stuck_after",
        "action crash needs stuck_after",
    ),
    Broken(
        "crash without escalation",
        lambda data: data.pop("escalation"),
        "exit_monitoring.rules[1].stuck_after",
        'needs a state to escalate to; declare "escalation: {to: stuck}"',
    ),
    Broken(
        "two outcomes",
        _set("exit_monitoring.rules[0].action", "mark_dead"),
        "exit_monitoring.rules[0]",
        'needs exactly one of "then", "then_when", "action" (has: then, action)',
    ),
    Broken(
        "second fallback unreachable",
        _rules_append({"status": "working", "action": "mark_dead"}),
        "exit_monitoring.rules[3]",
        "unreachable: rules[1] already handles working",
    ),
    Broken(
        "respawn without respawn_prompt",
        _rules_append({"status": "review", "no_artifact": True, "action": "respawn"}),
        "exit_monitoring.rules[3].action",
        "respawn needs states.review.respawn_prompt",
    ),
    Broken(
        "gate section not a heading",
        _set("transitions[1].gate.section", "Handoff"),
        "transitions[1].gate.section",
        'expected a level-2 heading like "## Handoff"',
    ),
    Broken(
        "bad verdict",
        _set("transitions[1].gate.verdict", "MAYBE"),
        "transitions[1].gate.verdict",
        "expected PASS or FAIL",
    ),
    Broken(
        "on_enter of a state tasks cannot start in",
        _set("states.review", {"on_enter": [{"action": "acquire_workspace"}]}),
        "states.review.on_enter",
        'runs only for tasks created in "review", which is not in initial_statuses',
    ),
    Broken(
        "terminal initial status",
        _set("initial_statuses", ["pending", "done"]),
        "initial_statuses[1]",
        '"done" is terminal',
    ),
    Broken(
        "empty_summary_status outside initial_statuses",
        _set("empty_summary_status", "review"),
        "empty_summary_status",
        '"review" is not in initial_statuses (pending)',
    ),
    Broken(
        "escalation to terminal",
        _set("escalation.to", "done"),
        "escalation.to",
        '"done" is terminal',
    ),
    Broken(
        "self transition",
        _append("transitions", {"from": "working", "to": "working"}),
        "transitions[5].to",
        "same as from",
    ),
    Broken(
        "version not an integer",
        _set("version", "one"),
        "version",
        "expected an integer, got a string",
    ),
    Broken(
        "missing required key",
        lambda data: data.pop("transitions"),
        "transitions",
        "required key is missing",
    ),
]


def _states(**changes: object) -> Mutate:
    return lambda data: data["states"].update(changes)


ROLES = [
    Broken(
        "unknown role",
        _states(done={"terminal": True, "role": "finished"}),
        "states.done.role",
        "expected one of queue, done, cancelled, got 'finished'",
    ),
    Broken(
        "role done on an active state",
        _states(review={"role": "done"}),
        "states.review.role",
        'role done needs a terminal state; "review" is not (terminal: true)',
    ),
    Broken(
        "role cancelled on an active state",
        _states(stuck={"role": "cancelled"}),
        "states.stuck.role",
        'role cancelled needs a terminal state; "stuck" is not',
    ),
    Broken(
        "role queue on a terminal state",
        _states(done={"terminal": True, "role": "queue"}),
        "states.done.role",
        'role queue needs a non-terminal state; "done" is terminal',
    ),
    Broken(
        "two queues",
        _states(pending={"role": "queue"}, stuck={"role": "queue"}),
        "states.stuck.role",
        "role queue is already declared by states.pending; at most one state per role",
    ),
    Broken(
        "two done states",
        _states(done={"terminal": True, "role": "done"}, gone={"terminal": True, "role": "done"}),
        "states.gone.role",
        "role done is already declared by states.done",
    ),
    Broken(
        "terminal state waits for a human",
        _states(done={"terminal": True, "waits_for_human": True}),
        "states.done.waits_for_human",
        "a terminal state waits for nothing",
    ),
    Broken(
        "waits_for_human not a boolean",
        _states(review={"waits_for_human": "yes"}),
        "states.review.waits_for_human",
        "expected true or false, got a string",
    ),
]

CASES = RULES + OTHERS + ROLES


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_broken_workflow_names_file_and_key_path(tmp_path: Path, case: Broken) -> None:
    data = copy.deepcopy(base())
    case.mutate(data)
    path = write(tmp_path, data)
    with pytest.raises(WorkflowError) as info:
        load_workflow_file(path)
    message = str(info.value)
    assert message.startswith(f"broken.yml: {case.key_path}: "), message
    assert case.says in message, message
    assert "\n" not in message


def test_error_format_matches_the_documented_example() -> None:
    text = (files("orange._workflows") / "default.yml").read_text()
    head, tail = text.split("\ntransitions:\n")
    tail = tail.replace("- action: spawn_reviewer", "- action: spwan_agent", 1)
    text = head + "\ntransitions:\n" + tail
    with pytest.raises(WorkflowError) as info:
        load_workflow(text, "default.yml")
    known = ", ".join(ACTION_PARAMS)
    assert str(info.value) == (
        'default.yml: transitions[7].hooks[1].action: unknown action "spwan_agent" '
        f'(known: {known}); did you mean "spawn_agent"?'
    )


# Nine aliases of nine aliases, ten levels deep: 9**10 visits for a reader that follows
# every alias, a few hundred bytes to write.
ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(10)
)

# Twenty levels behind an anchor, used twenty levels deep: 41 levels once followed.
DEEP_ALIASES = "a: &a " + "[" * 20 + "]" * 20 + "\nb: " + "[" * 21 + "*a" + "]" * 21 + "\n"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("name: x\nversion: 1\nname: y\n", "broken.yml: has the key 'name' twice (line 3)"),
        ("states:\n  a: {}\n  a: {}\n", "broken.yml: states: has the key 'a' twice (line 3)"),
        ("name: [unclosed\n", "broken.yml: is not valid YAML:"),
        ("", "broken.yml: the file is empty"),
        ("- a\n- b\n", "broken.yml: expected a mapping, got a list"),
        ("name: !!python/object:os.system x\n", "broken.yml: invalid YAML:"),
        (ALIAS_BOMB, "broken.yml: f[0]: makes more than 100000 nodes with its aliases"),
        (DEEP_ALIASES, "broken.yml: b[0]" + "[0]" * 20 + ": is nested deeper than 32 with"),
        ("x: " + "[" * 20000 + "]" * 20000 + "\n", "broken.yml: is nested deeper than 32"),
        ("x: " + "[" * 33 + "]" * 33 + "\n", "broken.yml: x" + "[0]" * 31 + ": is nested deeper"),
        ("x: '" + "a" * 1024 * 1024 + "'\n", "broken.yml: is larger than 1024 KiB"),
    ],
    ids=[
        "duplicate top key",
        "duplicate state",
        "syntax error",
        "empty",
        "not a mapping",
        "unsafe tag",
        "alias bomb",
        "deep through aliases",
        "deep past libyaml's limit",
        "deep",
        "too large",
    ],
)
def test_yaml_level_errors(text: str, says: str) -> None:
    with pytest.raises(WorkflowError) as info:
        load_workflow(text, "broken.yml")
    assert str(info.value).startswith(says)


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_workflow_loads_and_keeps_its_source(name: str) -> None:
    resource = files("orange._workflows") / f"{name}.yml"
    text = resource.read_text()
    workflow = load_workflow(text, f"{name}.yml")
    assert workflow.name == name
    assert workflow.source_text == text
    assert workflow.source == f"{name}.yml"
    assert workflow.escalation is not None
    assert workflow.escalation.to == "stuck"


def _hook(hook: HookSpec) -> str:
    """``spawn_agent(worker)``: the action and the prompt/message/field it names."""
    arg = next((hook.params[k] for k in ("prompt", "message", "field") if k in hook.params), None)
    return hook.action if arg is None else f"{hook.action}({arg})"


def _row(t: Transition) -> tuple[str, str, str, str, tuple[str, ...]]:
    gate = ""
    if t.gate is not None:
        gate = t.gate.section + (f" {t.gate.verdict}" if t.gate.verdict else "")
        gate += f" {'/'.join(t.gate.fields)}" if t.gate.fields else ""
    when = t.when.text if t.when else ""
    return (t.from_, t.to, gate, when, tuple(_hook(h) for h in t.hooks))


HANDOFF = "## Handoff DONE/REMAINING/DECISIONS/UNCERTAIN"
# A release starts the next queued task (issue 29, not in seed 000: only a merge did).
KILL_RELEASE = ("kill_session", "release_workspace", "spawn_next")
# A human's send-back starts a new review cycle (issue 10, not in seed 000).
NEW_CYCLE = (
    "increment(review_cycle)",
    "reset(review_round)",
    "notify_worker(changes_requested)",
)

# Seed 000's transition table, row by row.
SEED_000 = [
    ("pending", "planning", "", "", ("acquire_workspace", "spawn_agent(worker)")),
    ("pending", "cancelled", "", "", ()),
    ("planning", "working", "## Plan APPROACH/TOUCHING", "", ()),
    ("planning", "clarification", "", "", ()),
    ("planning", "cancelled", "", "", KILL_RELEASE),
    ("clarification", "planning", "", "", ()),
    ("clarification", "cancelled", "", "", KILL_RELEASE),
    (
        "working",
        "agent-review",
        HANDOFF,
        "",
        ("increment(review_round)", "spawn_reviewer(reviewer)"),
    ),
    ("working", "clarification", "", "", ()),
    ("working", "stuck", "", "", ()),
    ("working", "cancelled", "", "", KILL_RELEASE),
    ("agent-review", "reviewing", "## Review PASS", "", ("kill_reviewer",)),
    (
        "agent-review",
        "working",
        "## Review FAIL",
        "review_round < 2",
        ("kill_reviewer", "notify_worker(review_failed)"),
    ),
    (
        "agent-review",
        "stuck",
        "## Review FAIL",
        "review_round >= 2",
        ("kill_reviewer", "notify_worker(stuck_fix)"),
    ),
    ("agent-review", "cancelled", "", "", ("kill_reviewer", *KILL_RELEASE)),
    ("reviewing", "working", "", "", NEW_CYCLE),
    (
        "reviewing",
        "done",
        "",
        "",
        ("kill_session", "release_workspace", "delete_remote_branch", "spawn_next"),
    ),
    ("reviewing", "cancelled", "", "", KILL_RELEASE),
    ("stuck", "reviewing", "", "", ()),
    ("stuck", "working", "", "", NEW_CYCLE),  # not in seed 000 (issue 10)
    ("stuck", "cancelled", "", "", KILL_RELEASE),
]


def test_default_is_seed_000_table() -> None:
    text = (files("orange._workflows") / "default.yml").read_text()
    workflow = load_workflow(text, "default.yml")
    assert [_row(t) for t in workflow.transitions] == SEED_000
    assert list(workflow.states) == [
        "pending",
        "planning",
        "clarification",
        "working",
        "agent-review",
        "reviewing",
        "stuck",
        "done",
        "cancelled",
    ]
    assert workflow.initial_statuses == ("pending", "clarification", "agent-review", "reviewing")
    assert workflow.empty_summary_status == "clarification"
    respawn = {name: s.respawn_prompt for name, s in workflow.states.items() if s.respawn_prompt}
    assert respawn == {
        "planning": "worker_respawn",
        "clarification": "clarification",
        "working": "worker_respawn",
        "agent-review": "reviewer",
        "stuck": "stuck_fix",
    }
    assert workflow.states["agent-review"].agent == "reviewer"
    assert workflow.states["working"].agent == "worker"
    assert [h.action for h in workflow.states["agent-review"].on_enter] == [
        "acquire_workspace",
        "increment",
        "spawn_reviewer",
    ]
    assert [h.action for h in workflow.states["clarification"].on_enter] == [
        "acquire_workspace",
        "spawn_agent",
    ]
    clarification = workflow.prompts["clarification"]
    assert "--status planning" in clarification
    assert "--status working" in clarification  # planning -> working, after the plan
    assert "--status reviewing" in workflow.prompts["stuck_fix"]
    for key in ("review_failed", "changes_requested"):  # typed into a running agent
        assert "\n" not in workflow.prompts[key]


def test_workflow_queries() -> None:
    text = (files("orange._workflows") / "default.yml").read_text()
    workflow = load_workflow(text, "default.yml")
    assert workflow.targets_from("agent-review") == ["reviewing", "working", "stuck", "cancelled"]
    assert len(workflow.transitions_between("agent-review", "working")) == 1
    assert workflow.has_transition("stuck", "reviewing")
    assert workflow.has_transition("stuck", "working")  # added to seed 000 (issue 10)
    assert workflow.is_terminal("done")
    assert not workflow.is_terminal("working")
    assert not workflow.is_terminal("no-such-state")
    assert "done" not in workflow.active_states()
    assert workflow.active_states()[0] == "pending"
    assert workflow.gated_sections("working") == ("## Handoff",)
    assert workflow.gated_sections("agent-review") == ("## Review",)
    assert workflow.gated_sections("reviewing") == ()
    assert [r.action for r in workflow.rules_for("agent-review")] == [None, None, "respawn"]
