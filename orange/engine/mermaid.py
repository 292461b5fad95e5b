"""A workflow as a Mermaid ``stateDiagram-v2``, for docs and ``orange workflow show``.

State names that are not plain identifiers (``agent-review``) get an alias declared
with ``state "agent-review" as agent_review``.  Edge labels show the gate (section,
verdict) and the ``when`` condition; ``<`` and ``>`` are written as Mermaid entity
codes (``#lt;``, ``#gt;``) so the renderer does not read them as markup.
"""

from __future__ import annotations

import re

from orange.engine.workflow import Transition, Workflow

_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def state_id(name: str) -> str:
    """A Mermaid-safe id for a state name: ``agent-review`` -> ``agent_review``."""
    ident = _UNSAFE.sub("_", name)
    return ident if ident[:1].isalpha() else f"s_{ident}"


def _escape(text: str) -> str:
    return text.replace(":", "#58;").replace("<", "#lt;").replace(">", "#gt;")


def edge_label(transition: Transition) -> str:
    """``Handoff``, ``Review PASS``, ``Review FAIL, review_round < 2`` ... (unescaped)."""
    parts: list[str] = []
    gate = transition.gate
    if gate is not None:
        name = gate.section.removeprefix("## ").strip()
        parts.append(f"{name} {gate.verdict}" if gate.verdict else name)
    if transition.when is not None:
        parts.append(str(transition.when))
    return ", ".join(parts)


def to_mermaid(workflow: Workflow) -> str:
    """The diagram text (ends with a newline)."""
    ids: dict[str, str] = {}
    for name in workflow.states:
        ident = state_id(name)
        while ident in ids.values():  # "a-b" and "a_b" must not share an id
            ident += "_"
        ids[name] = ident
    lines = ["stateDiagram-v2"]
    for name, ident in ids.items():
        if ident != name:
            lines.append(f'    state "{name}" as {ident}')
    lines.append(f"    [*] --> {ids[workflow.initial_status]}")
    for transition in workflow.transitions:
        edge = f"    {ids[transition.from_]} --> {ids[transition.to]}"
        label = edge_label(transition)
        lines.append(f"{edge}: {_escape(label)}" if label else edge)
    for name, state in workflow.states.items():
        if state.terminal:
            lines.append(f"    {ids[name]} --> [*]")
    if workflow.escalation is not None:
        target = ids[workflow.escalation.to]
        lines.append(f"    note right of {target}: crash escalation from any active state")
    return "\n".join(lines) + "\n"
