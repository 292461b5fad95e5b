"""The ``escalation`` and ``exit_monitoring`` sections of a workflow file (seed 001
"Exit Monitoring"): what the monitor does when a state's agent dies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast, get_args

from orange.engine.hooklist import parse_hooks
from orange.engine.loadbase import LoaderBase
from orange.engine.when import When, describe_point, find_gap, find_overlap
from orange.engine.workflow import Branch, Escalation, ExitMonitoring, ExitRule, RuleAction
from orange.engine.yamldoc import join, known

_RULE_KEYS = (
    "status",
    "has_artifact",
    "no_artifact",
    "then",
    "then_when",
    "action",
    "stuck_after",
)


class ExitRuleParser(LoaderBase):
    def _escalation(self, value: object) -> Escalation | None:
        if value is None:
            return None
        raw = self.doc.mapping(value, "escalation", ("to", "hooks"), required=("to",))
        to = self._known_state(raw["to"], "escalation.to")
        if self.states[to].terminal:
            self.doc.fail(
                "escalation.to", f'"{to}" is terminal; escalate to a state a human can act on'
            )
        return Escalation(
            to, parse_hooks(self.doc, self.prompts, raw.get("hooks"), "escalation.hooks")
        )

    def _exit_monitoring(self, value: object, escalation: Escalation | None) -> ExitMonitoring:
        raw = self.doc.mapping(value, "exit_monitoring", ("poll_interval", "rules"))
        interval = self.doc.integer(
            raw.get("poll_interval", 30), "exit_monitoring.poll_interval", minimum=1
        )
        rules: list[ExitRule] = []
        fallback: dict[str, int] = {}
        for index, item in enumerate(self.doc.sequence(raw.get("rules"), "exit_monitoring.rules")):
            path = join("exit_monitoring.rules", index)
            rule = self._rule(item, path, escalation)
            if rule.is_fallback:
                if rule.status in fallback:
                    self.doc.fail(
                        path,
                        f"unreachable: rules[{fallback[rule.status]}] already handles "
                        f"{rule.status} when no artifact matches",
                    )
                fallback[rule.status] = index
            rules.append(rule)
        return ExitMonitoring(interval, tuple(rules))

    def _rule(self, value: object, path: str, escalation: Escalation | None) -> ExitRule:
        doc = self.doc
        raw = doc.mapping(value, path, _RULE_KEYS, required=("status",))
        status = self._known_state(raw["status"], join(path, "status"))
        if self.states[status].terminal:
            doc.fail(join(path, "status"), f'"{status}" is terminal; no agent runs there')
        artifact = (
            self._gate(raw["has_artifact"], join(path, "has_artifact"))
            if "has_artifact" in raw
            else None
        )
        no_artifact = False
        if "no_artifact" in raw:
            if raw["no_artifact"] is not True:
                doc.fail(join(path, "no_artifact"), "must be true (leave it out otherwise)")
            if artifact is not None:
                doc.fail(join(path, "no_artifact"), "cannot be combined with has_artifact")
            no_artifact = True
        outcomes = [key for key in ("then", "then_when", "action") if key in raw]
        if len(outcomes) != 1:
            doc.fail(
                path, f'needs exactly one of "then", "then_when", "action" (has: {known(outcomes)})'
            )
        then = None
        if "then" in raw:
            then = self._known_state(raw["then"], join(path, "then"))
            self._has_transition(status, then, join(path, "then"))
        branches = self._then_when(raw.get("then_when"), status, join(path, "then_when"))
        action = raw.get("action")
        if action is not None and action not in get_args(RuleAction):
            doc.fail(
                join(path, "action"),
                f"expected one of {', '.join(get_args(RuleAction))}, got {action!r}",
            )
        if action == "respawn" and self.states[status].respawn_prompt is None:
            doc.fail(join(path, "action"), f"respawn needs states.{status}.respawn_prompt")
        stuck_after = self._stuck_after(raw, path, cast("RuleAction | None", action), escalation)
        return ExitRule(
            status,
            artifact,
            no_artifact,
            then,
            branches,
            cast("RuleAction | None", action),
            stuck_after,
        )

    def _then_when(self, value: object, status: str, path: str) -> tuple[Branch, ...]:
        if value is None:
            return ()
        items = self.doc.sequence(value, path)
        if not items:
            self.doc.fail(path, "list at least one {when, then} branch")
        branches: list[Branch] = []
        for index, item in enumerate(items):
            item_path = join(path, index)
            raw = self.doc.mapping(item, item_path, ("when", "then"), required=("when", "then"))
            when = self._when(raw["when"], join(item_path, "when"))
            then = self._known_state(raw["then"], join(item_path, "then"))
            self._has_transition(status, then, join(item_path, "then"))
            branches.append(Branch(when, then))
        whens: list[When | None] = [b.when for b in branches]
        gap = find_gap(whens)
        if gap is not None:
            self.doc.fail(path, f"not exhaustive: no branch holds when {describe_point(gap)}")
        overlap = find_overlap(whens)
        if overlap is not None:
            first, second, point = overlap
            self.doc.fail(
                join(join(path, second), "when"),
                f"overlaps then_when[{first}]: both hold when {describe_point(point)}",
            )
        return tuple(branches)

    def _stuck_after(
        self,
        raw: Mapping[str, object],
        path: str,
        action: RuleAction | None,
        escalation: Escalation | None,
    ) -> int | None:
        key = join(path, "stuck_after")
        if "stuck_after" not in raw:
            if action == "crash":
                self.doc.fail(
                    key, "action crash needs stuck_after (the crash count that escalates)"
                )
            return None
        if action not in ("crash", "respawn"):
            self.doc.fail(key, "only an action crash or respawn counts crashes")
        count = self.doc.integer(raw["stuck_after"], key, minimum=1)
        if escalation is None:
            self.doc.fail(key, 'needs a state to escalate to; declare "escalation: {to: stuck}"')
        return count
