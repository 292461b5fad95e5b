"""A workflow as rich tables, for ``orange workflow show``.

Everything shown comes from a workflow file (untrusted input), so it is rendered as
plain text, never as rich markup.  Nothing is cut off: on a terminal long cells wrap;
into a pipe or a file the tables take the width they need.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

from orange.engine.actionspec import ACTION_PARAMS
from orange.engine.workflow import Gate, HookSpec, Workflow

# Output that is not a terminal is not wrapped to 80 columns (rich's default).
_PIPE_WIDTH = 10_000


def _gate(gate: Gate | None) -> str:
    if gate is None:
        return ""
    text = gate.section
    if gate.fields:
        text += f" ({' / '.join(gate.fields)})"
    if gate.verdict:
        text += f", Verdict: {gate.verdict}"
    return text


def _hook(spec: HookSpec) -> str:
    """``spawn_agent(prompt=worker)``: parameters left at their defaults are not shown."""
    declared = ACTION_PARAMS.get(spec.action, {})
    shown = {
        k: v
        for k, v in spec.params.items()
        if v not in (None, "") and (k not in declared or declared[k].default != v)
    }
    if not shown:
        return spec.action
    args = ", ".join(f"{k}={v}" for k, v in shown.items())
    return f"{spec.action}({args})"


def _hooks(specs: tuple[HookSpec, ...]) -> str:
    """One hook per line, so a long list wraps between hooks, not inside a name."""
    return "\n".join(_hook(h) for h in specs)


def _table(title: str, columns: tuple[str, ...]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _row(table: Table, *cells: str) -> None:
    table.add_row(*(Text(cell) for cell in cells))


def _console() -> Console:

    piped = not sys.stdout.isatty() and not os.environ.get("COLUMNS")
    return Console(highlight=False, width=_PIPE_WIDTH if piped else None)


def _human(workflow: Workflow, status: str) -> str:
    """``waits`` for a state waiting for a person, with where request-changes leads."""
    if not workflow.waits_for_human(status):
        return ""
    target = workflow.request_changes_target(status)
    return f"waits; request-changes -> {target}" if target else "waits"


def _moves(workflow: Workflow) -> Table:
    """The transitions; ``by`` says who may take each (an agent of the task in its
    role, a human, the engine)."""
    moves = _table("transitions", ("from", "to", "by", "when", "gate", "hooks"))
    for t in workflow.transitions:
        by = ", ".join(t.by)
        _row(moves, t.from_, t.to, by, str(t.when or ""), _gate(t.gate), _hooks(t.hooks))
    if workflow.escalation:
        hooks = _hooks(workflow.escalation.hooks)
        escalation = workflow.escalation.to
        _row(moves, "(any active)", escalation, "engine", "monitor only", "crash rule", hooks)
    return moves


def print_workflow(workflow: Workflow) -> None:
    console = _console()
    header = Text()
    header.append(workflow.name, style="bold")
    header.append(f" v{workflow.version}  {workflow.description}")
    console.print(header)
    states = _table(
        "states",
        ("state", "terminal", "role", "agent", "respawn prompt", "on enter", "human"),
    )
    for state in workflow.states.values():
        _row(
            states,
            state.name,
            "yes" if state.terminal else "",
            state.role or "",
            state.agent if state.agent != "none" else "",
            state.respawn_prompt or "",
            _hooks(state.on_enter),
            _human(workflow, state.name),
        )
    console.print(states)
    for note in workflow.warnings:
        console.print(Text(f"inferred: {note}"))
    console.print(_moves(workflow))
    if workflow.exit_monitoring.rules:
        rules = _table("exit monitoring", ("status", "when the agent dies", "then"))
        for rule in workflow.exit_monitoring.rules:
            if rule.has_artifact is not None:
                cond = f"has {_gate(rule.has_artifact)}"
            else:
                cond = "no artifact" if rule.no_artifact else "always"
            if rule.then:
                then = rule.then
            elif rule.then_when:
                then = "\n".join(f"{b.when} -> {b.then}" for b in rule.then_when)
            else:
                then = str(rule.action)
                if rule.stuck_after:
                    then += f" (stuck after {rule.stuck_after})"
            _row(rules, rule.status, cond, then)
        console.print(rules)
