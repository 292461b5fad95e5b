"""What to do about a dead agent: a pure decision over the workflow's exit rules.

`decide_dead_session` reads the task (frontmatter ``fields`` and ``body``) and the
freshness ``baseline`` and returns one decision; the engine applies it (a full
transition for `Advance`, a crash-count write and maybe the escalation move otherwise).

Order (seed 001, seed 000 "Auto-Advance Rules"): the first ``has_artifact`` rule of the
status whose gate holds on a fresh artifact wins; otherwise the status's fallback rule
(``no_artifact`` or status-only) decides; a status without rules is only marked dead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from orange.engine.gates import check_gate
from orange.engine.when import field_value
from orange.engine.workflow import ExitRule, Workflow


@dataclass(frozen=True)
class Advance:
    """Run the full transition to ``to`` (gates, hooks) as the monitor."""

    to: str
    reason: str


@dataclass(frozen=True)
class Crash:
    """Write ``crash_count``; when ``escalate_to`` is set, also make the escalation move."""

    crash_count: int
    stuck_after: int
    escalate_to: str | None
    reason: str


@dataclass(frozen=True)
class Respawn:
    """Respawn the state's agent with its respawn prompt.

    When the rule counts crashes (``count_crash``), write ``crash_count`` first; when
    ``escalate_to`` is set the threshold is reached: escalate instead of respawning.
    """

    count_crash: bool
    crash_count: int
    stuck_after: int | None
    escalate_to: str | None
    reason: str


@dataclass(frozen=True)
class MarkDead:
    """No automatic move: show the agent as dead until a human acts."""

    reason: str


DeadSessionDecision = Advance | Crash | Respawn | MarkDead


_WAITS = "the task waits for a human"


def joined(*parts: str) -> str:
    """A decision's reason from its parts, the empty ones left out."""
    return ", ".join(part for part in parts if part)


def decide_dead_session(
    workflow: Workflow,
    fields: Mapping[str, object],
    body: str,
    baseline: Mapping[str, str],
) -> DeadSessionDecision:
    """Decide what the monitor does for a task in ``fields["status"]`` whose agent died."""
    status = str(fields.get("status", ""))
    rules = workflow.rules_for(status)
    for rule in rules:
        if rule.has_artifact is not None:
            result = check_gate(rule.has_artifact, body, baseline)
            if result.ok:
                reason = f"{rule.has_artifact.section} present"
                if rule.has_artifact.verdict:
                    reason = f"{rule.has_artifact.section} verdict {rule.has_artifact.verdict}"
                return _outcome(workflow, rule, fields, reason)
    for rule in rules:
        if rule.is_fallback:
            # A rule for any exit of the status says nothing the event does not say
            # ("agent exited in stuck"), except that a person is the one to act.
            waits = workflow.waits_for_human(status)
            reason = "no valid artifact" if rule.no_artifact else _WAITS if waits else ""
            return _outcome(workflow, rule, fields, reason)
    return MarkDead(f"no exit rule for {status}")


def _outcome(
    workflow: Workflow, rule: ExitRule, fields: Mapping[str, object], reason: str
) -> DeadSessionDecision:
    if rule.then is not None:
        return Advance(rule.then, reason)
    for branch in rule.then_when:
        if branch.when.holds(fields):
            return Advance(branch.then, joined(reason, branch.when.text))
    if rule.then_when:  # the loader proves branches exhaustive; kept for safety
        return MarkDead(joined(reason, "but no then_when branch holds"))
    escalation = workflow.escalation.to if workflow.escalation else None
    count = field_value(fields, "crash_count")
    if rule.action == "crash":
        assert rule.stuck_after is not None  # the loader requires it for crash
        count += 1
        target = escalation if count >= rule.stuck_after else None
        return Crash(count, rule.stuck_after, target, joined(reason, f"crash {count}"))
    if rule.action == "respawn":
        counting = rule.stuck_after is not None
        if counting:
            count += 1
        reached = rule.stuck_after is not None and count >= rule.stuck_after
        said = joined(reason, f"crash {count}") if counting else reason
        return Respawn(counting, count, rule.stuck_after, escalation if reached else None, said)
    return MarkDead(reason)
