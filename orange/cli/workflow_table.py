"""A workflow as rich tables, for ``orange workflow show``."""

from __future__ import annotations

from orange.engine.workflow import Gate, HookSpec, Workflow


def _gate(gate: Gate | None) -> str:
    if gate is None:
        return ""
    text = gate.section
    if gate.fields:
        text += f" ({'/'.join(gate.fields)})"
    if gate.verdict:
        text += f", Verdict: {gate.verdict}"
    return text


def _hook(spec: HookSpec) -> str:
    shown = {k: v for k, v in spec.params.items() if v not in (None, "")}
    if not shown:
        return spec.action
    args = ", ".join(f"{k}={v}" for k, v in shown.items())
    return f"{spec.action}({args})"


def print_workflow(workflow: Workflow) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    console.print(f"[bold]{workflow.name}[/bold] v{workflow.version}  {workflow.description}")
    states = Table(title="states", title_justify="left")
    for column in ("state", "terminal", "agent", "respawn prompt", "on enter"):
        states.add_column(column)
    for state in workflow.states.values():
        states.add_row(
            state.name,
            "yes" if state.terminal else "",
            state.agent if state.agent != "none" else "",
            state.respawn_prompt or "",
            ", ".join(_hook(h) for h in state.on_enter),
        )
    console.print(states)
    moves = Table(title="transitions", title_justify="left")
    for column in ("from", "to", "when", "gate", "hooks"):
        moves.add_column(column)
    for t in workflow.transitions:
        moves.add_row(
            t.from_, t.to, str(t.when or ""), _gate(t.gate), ", ".join(_hook(h) for h in t.hooks)
        )
    if workflow.escalation:
        hooks = ", ".join(_hook(h) for h in workflow.escalation.hooks)
        moves.add_row("(any active)", workflow.escalation.to, "monitor only", "crash rule", hooks)
    console.print(moves)
    if workflow.exit_monitoring.rules:
        rules = Table(title="exit monitoring", title_justify="left")
        for column in ("status", "when the agent dies", "then"):
            rules.add_column(column)
        for rule in workflow.exit_monitoring.rules:
            if rule.has_artifact is not None:
                cond = f"has {_gate(rule.has_artifact)}"
            else:
                cond = "no artifact" if rule.no_artifact else "always"
            if rule.then:
                then = rule.then
            elif rule.then_when:
                then = "; ".join(f"{b.when} -> {b.then}" for b in rule.then_when)
            else:
                then = str(rule.action)
                if rule.stuck_after:
                    then += f" (stuck after {rule.stuck_after})"
            rules.add_row(rule.status, cond, then)
        console.print(rules)
