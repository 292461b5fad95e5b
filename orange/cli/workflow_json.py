"""A workflow as one JSON object, for ``orange workflow show --json``.

The same facts as the tables of `orange.cli.workflow_table`, as data: every state with
its role and agent, every transition with who may take it, its guard, gate and hooks,
the crash rule's escalation and the exit-monitoring rules.  Hook parameters are shown
in full (defaults included): a machine reading them should not need the defaults table.
"""

from __future__ import annotations

from typing import Any

from orange.engine.workflow import ExitRule, Gate, HookSpec, Workflow


def _gate(gate: Gate | None) -> dict[str, Any] | None:
    if gate is None:
        return None
    return {
        "section": gate.section,
        "required": gate.required,
        "fields": list(gate.fields),
        "verdict": gate.verdict,
    }


def _hooks(specs: tuple[HookSpec, ...]) -> list[dict[str, Any]]:
    return [{"action": spec.action, "params": dict(spec.params)} for spec in specs]


def _rule(rule: ExitRule) -> dict[str, Any]:
    # "state", not the file's "status": a "status" key is how a task's status is written,
    # and only the engine writes those (tests/engine/test_no_status_writes.py).
    return {
        "state": rule.status,
        "has_artifact": _gate(rule.has_artifact),
        "no_artifact": rule.no_artifact,
        "then": rule.then,
        "then_when": [{"when": str(b.when), "then": b.then} for b in rule.then_when],
        "action": rule.action,
        "stuck_after": rule.stuck_after,
    }


def workflow_object(workflow: Workflow) -> dict[str, Any]:
    states = [
        {
            "name": state.name,
            "terminal": state.terminal,
            "role": state.role,
            "agent": state.agent,
            "respawn_prompt": state.respawn_prompt,
            "on_enter": _hooks(state.on_enter),
            "waits_for_human": state.waits_for_human,
            "request_changes_to": workflow.request_changes_target(state.name)
            if state.waits_for_human
            else None,
        }
        for state in workflow.states.values()
    ]
    transitions = [
        {
            "from": t.from_,
            "to": t.to,
            "by": list(t.by),
            "when": str(t.when) if t.when else None,
            "gate": _gate(t.gate),
            "hooks": _hooks(t.hooks),
        }
        for t in workflow.transitions
    ]
    escalation = workflow.escalation
    return {
        "name": workflow.name,
        "version": workflow.version,
        "description": workflow.description,
        "source": workflow.source,
        "initial_statuses": list(workflow.initial_statuses),
        "states": states,
        "transitions": transitions,
        "escalation": None
        if escalation is None
        else {"to": escalation.to, "hooks": _hooks(escalation.hooks)},
        "exit_monitoring": {
            "poll_interval": workflow.exit_monitoring.poll_interval,
            "rules": [_rule(rule) for rule in workflow.exit_monitoring.rules],
        },
        "warnings": list(workflow.warnings),
    }
