"""Workflow YAML -> a validated `Workflow`, or a `WorkflowError` naming file and key.

Beyond types and unknown keys, loading enforces seed 001's nine validation rules:

1. every transition ``to`` is a state;  2. every ``from`` is a state;
3. no transition leaves a terminal state;
4. every hook ``prompt`` (and ``notify_worker`` ``message``) is a key of ``prompts``;
5. every ``respawn_prompt`` is a key of ``prompts``;
6. every exit-rule ``then`` target is a state (and a transition leads there);
7. transitions sharing ``from`` and ``to`` have mutually exclusive ``when`` clauses;
8. ``when`` expressions parse;  9. ``then_when`` branches are exhaustive (and exclusive).

Status roles are checked and, where a file does not declare them, inferred by
`orange.engine.roles`; exit rules are parsed by `orange.engine.exitparse`; who may take
each transition (``by:``) by `orange.engine.movers`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import cast, get_args

from orange.engine.exitparse import ExitRuleParser
from orange.engine.hooklist import parse_hooks
from orange.engine.movers import MoverRules
from orange.engine.roles import RoleInference
from orange.engine.when import describe_point, find_overlap
from orange.engine.workflow import (
    AgentWindow,
    Role,
    State,
    Transition,
    Workflow,
)
from orange.engine.yamldoc import Doc, describe, join, known

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOP = (
    "name",
    "version",
    "description",
    "initial_statuses",
    "empty_summary_status",
    "escalation",
    "states",
    "transitions",
    "exit_monitoring",
    "prompts",
)
_STATE_KEYS = ("terminal", "respawn_prompt", "agent", "on_enter", "role", "waits_for_human")
_ROLES: tuple[Role, ...] = get_args(Role)
_TRANSITION_KEYS = ("from", "to", "when", "gate", "hooks", "by")
_GATE_KEYS = ("section", "required", "fields", "verdict")


def load_workflow_file(path: str | Path, source: str | None = None) -> Workflow:
    """Load ``path``; errors start with ``source`` (default: the file name)."""
    path = Path(path)
    label = source or path.name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        Doc(label).fail("", f"cannot read workflow file: {exc}")
    return load_workflow(text, label)


def load_workflow(text: str, source: str) -> Workflow:
    """Parse and validate workflow YAML ``text``; ``source`` names it in errors."""
    return _Loader(Doc(source)).load(text)


class _Loader(ExitRuleParser, RoleInference, MoverRules):
    """Reads one workflow document; every error names the file and the key."""

    # -- top level -------------------------------------------------------------------

    def load(self, text: str) -> Workflow:
        doc = self.doc
        raw = doc.parse(text)
        if raw is None:
            doc.fail("", "the file is empty")
        top = doc.mapping(raw, "", _TOP, required=("name", "version", "states", "transitions"))
        name = doc.string(top["name"], "name")
        version = doc.integer(top["version"], "version", minimum=1)
        description = top.get("description") or ""
        if not isinstance(description, str):
            doc.fail("description", f"expected a string, got {describe(description)}")
        raw_states = self._state_names(top["states"])
        self.prompts = self._prompts(top.get("prompts"))
        initial = self._initial_statuses(top.get("initial_statuses"), raw_states)
        empty = self._empty_summary_status(top.get("empty_summary_status"), initial)
        for state, value in raw_states.items():
            self.states[state] = self._state(state, value, initial)
        for index, item in enumerate(self.doc.sequence(top["transitions"], "transitions")):
            self.transitions.append(self._transition(item, join("transitions", index)))
        self._check_ambiguity()
        escalation = self._escalation(top.get("escalation"))
        monitoring = self._exit_monitoring(top.get("exit_monitoring"), escalation)
        inferred = self._infer_roles(initial, monitoring)
        inferred_by = self._settle_by(monitoring)
        return Workflow(
            name=name,
            version=version,
            description=description,
            states=MappingProxyType(dict(self.states)),
            transitions=tuple(self.transitions),
            exit_monitoring=monitoring,
            prompts=MappingProxyType(dict(self.prompts)),
            initial_statuses=initial,
            empty_summary_status=empty,
            escalation=escalation,
            source=doc.source,
            source_text=text,
            inferred_roles=inferred,
            inferred_by=inferred_by,
        )

    def _state_names(self, value: object) -> dict[str, object]:
        if not isinstance(value, dict) or not value:
            self.doc.fail("states", f"expected a mapping of states, got {describe(value)}")
        for name in value:
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                self.doc.fail(
                    join("states", str(name)),
                    "a state name starts with a letter and has only letters, digits, - and _",
                )
        return cast(dict[str, object], value)

    def _prompts(self, value: object) -> dict[str, str]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.doc.fail("prompts", f"expected a mapping of prompt texts, got {describe(value)}")
        prompts: dict[str, str] = {}
        for key, text in value.items():
            if not isinstance(key, str) or not _NAME.fullmatch(key):
                self.doc.fail(
                    join("prompts", str(key)), "a prompt key has only letters, digits, - and _"
                )
            if not isinstance(text, str):
                self.doc.fail(join("prompts", key), f"expected text, got {describe(text)}")
            prompts[key] = text
        return prompts

    def _initial_statuses(self, value: object, states: Mapping[str, object]) -> tuple[str, ...]:
        if value is None:
            first = next(iter(states))
            if self._is_terminal(states[first]):
                self.doc.fail(
                    join("states", first),
                    "the first state is where tasks start; it cannot be terminal",
                )
            return (first,)
        names = self.doc.strings(value, "initial_statuses")
        if not names:
            self.doc.fail("initial_statuses", "must list at least one state")
        for index, name in enumerate(names):
            path = join("initial_statuses", index)
            self._known_state(name, path, states)
            if self._is_terminal(states[name]):
                self.doc.fail(path, f'"{name}" is terminal; a task cannot start there')
        return tuple(names)

    def _empty_summary_status(self, value: object, initial: Sequence[str]) -> str | None:
        if value is None:
            return None
        status = self.doc.string(value, "empty_summary_status")
        if status not in initial:
            self.doc.fail(
                "empty_summary_status", f'"{status}" is not in initial_statuses ({known(initial)})'
            )
        return status

    # -- states, transitions, hooks ------------------------------------------------------

    def _state(self, name: str, value: object, initial: Sequence[str]) -> State:
        path = join("states", name)
        raw = self.doc.mapping(value, path, _STATE_KEYS)
        terminal = self.doc.boolean(raw.get("terminal", False), join(path, "terminal"))
        respawn = None
        if raw.get("respawn_prompt") is not None:
            respawn = self.doc.reference(
                raw["respawn_prompt"], join(path, "respawn_prompt"), self.prompts, "prompt"
            )
        agent_default = "worker" if respawn and not terminal else "none"
        agent = raw.get("agent", agent_default)
        choices = get_args(AgentWindow)
        if agent not in choices:
            self.doc.fail(
                join(path, "agent"), f"expected one of {', '.join(choices)}, got {agent!r}"
            )
        on_enter = parse_hooks(self.doc, self.prompts, raw.get("on_enter"), join(path, "on_enter"))
        if terminal:
            for key in ("respawn_prompt", "on_enter"):
                if raw.get(key):
                    self.doc.fail(join(path, key), "a terminal state runs no agent")
            if agent != "none":
                self.doc.fail(join(path, "agent"), "a terminal state runs no agent")
        if on_enter and name not in initial:
            self.doc.fail(
                join(path, "on_enter"),
                f'runs only for tasks created in "{name}", which is not in initial_statuses',
            )
        role = self._role(name, raw.get("role"), terminal, join(path, "role"))
        waits = self.doc.boolean(raw.get("waits_for_human", False), join(path, "waits_for_human"))
        if "waits_for_human" in raw:
            self.declares_waiting = True
        if waits and terminal:
            self.doc.fail(join(path, "waits_for_human"), "a terminal state waits for nothing")
        return State(name, terminal, respawn, cast(AgentWindow, agent), on_enter, role, waits)

    def _transition(self, value: object, path: str) -> Transition:
        raw = self.doc.mapping(value, path, _TRANSITION_KEYS, required=("from", "to"))
        from_ = self._known_state(raw["from"], join(path, "from"))
        to = self._known_state(raw["to"], join(path, "to"))
        if self.states[from_].terminal:
            self.doc.fail(join(path, "from"), f'"{from_}" is terminal; no transition may leave it')
        if from_ == to:
            self.doc.fail(
                join(path, "to"), f'same as from ("{to}"); a transition must change the status'
            )
        when = self._when(raw["when"], join(path, "when")) if "when" in raw else None
        gate = self._gate(raw["gate"], join(path, "gate")) if "gate" in raw else None
        hooks = parse_hooks(self.doc, self.prompts, raw.get("hooks"), join(path, "hooks"))
        by = self._by(raw, path)
        if by is None:  # completed once the exit rules are known (`MoverRules`)
            self.undeclared_by.add(len(self.transitions))
            return Transition(from_, to, when, gate, hooks)
        return Transition(from_, to, when, gate, hooks, by)

    def _check_ambiguity(self) -> None:
        groups: dict[tuple[str, str], list[int]] = {}
        for index, t in enumerate(self.transitions):
            groups.setdefault((t.from_, t.to), []).append(index)
        for (from_, to), indexes in groups.items():
            overlap = find_overlap([self.transitions[i].when for i in indexes])
            if overlap is None:
                continue
            first, second, point = indexes[overlap[0]], indexes[overlap[1]], overlap[2]
            path = join("transitions", second)
            if self.transitions[second].when is None and self.transitions[first].when is None:
                self.doc.fail(
                    path,
                    f"duplicates transitions[{first}] ({from_} -> {to}); "
                    'give them exclusive "when" clauses',
                )
            if self.transitions[second].when is not None:
                path = join(path, "when")
            self.doc.fail(
                path,
                f"ambiguous with transitions[{first}] ({from_} -> {to}): "
                f"both hold when {describe_point(point)}",
            )
