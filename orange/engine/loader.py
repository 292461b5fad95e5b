"""Workflow YAML -> a validated `Workflow`, or a `WorkflowError` naming file and key.

Beyond types and unknown keys, loading enforces seed 001's nine validation rules:

1. every transition ``to`` is a state;  2. every ``from`` is a state;
3. no transition leaves a terminal state;
4. every hook ``prompt`` (and ``notify_worker`` ``message``) is a key of ``prompts``;
5. every ``respawn_prompt`` is a key of ``prompts``;
6. every exit-rule ``then`` target is a state (and a transition leads there);
7. transitions sharing ``from`` and ``to`` have mutually exclusive ``when`` clauses;
8. ``when`` expressions parse;  9. ``then_when`` branches are exhaustive (and exclusive).

Status roles (``role: queue | done | cancelled``, ``waits_for_human: true``): a role
names at most one state; ``done`` and ``cancelled`` must be terminal, ``queue`` must
not, and a terminal state cannot wait for a human.  A file that declares no state with
some role (users' older files, copies committed in the tasks ref) gets it inferred, and
`Workflow.inferred_roles` says so (it also notes a role no state has, declared or
inferred); inference only considers states without a role:

- queue: the first of ``initial_statuses`` with no agent and no ``on_enter`` that has a
  transition spawning an agent (``spawn_agent``/``spawn_reviewer``); else a
  non-terminal state named ``pending``;
- cancelled: a terminal state named ``cancelled``;
- done: a terminal state named ``done``; else the only terminal state (other than the
  cancelled one) that a transition with a ``release_workspace`` hook leads to;
- waits_for_human (only when no state declares the key, true or false): every
  non-terminal state other than the queue for which the monitor never acts on its own
  (its exit rules, if any, are all ``action: mark_dead``) and that either runs no agent
  or has such a ``mark_dead`` rule (an agent the monitor only flags as dead is one a
  person is talking to; an agent state with no rule at all is merely unmonitored).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import cast, get_args

from orange.engine.hooklist import parse_hooks
from orange.engine.when import When, describe_point, find_gap, find_overlap, parse_when
from orange.engine.workflow import (
    AgentWindow,
    Branch,
    Escalation,
    ExitMonitoring,
    ExitRule,
    Gate,
    HookSpec,
    Role,
    RuleAction,
    State,
    Transition,
    Verdict,
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
_TRANSITION_KEYS = ("from", "to", "when", "gate", "hooks")
_GATE_KEYS = ("section", "required", "fields", "verdict")
_RULE_KEYS = (
    "status",
    "has_artifact",
    "no_artifact",
    "then",
    "then_when",
    "action",
    "stuck_after",
)


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


class _Loader:
    def __init__(self, doc: Doc) -> None:
        self.doc = doc
        self.states: dict[str, State] = {}
        self.prompts: dict[str, str] = {}
        self.transitions: list[Transition] = []
        self.role_states: dict[Role, str] = {}
        self.declares_waiting = False

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

    @staticmethod
    def _is_terminal(value: object) -> bool:
        return isinstance(value, dict) and value.get("terminal") is True

    # -- references --------------------------------------------------------------------

    def _known_state(
        self, name: object, path: str, states: Mapping[str, object] | None = None
    ) -> str:
        return self.doc.reference(name, path, self.states if states is None else states, "state")

    def _when(self, value: object, path: str) -> When:
        if not isinstance(value, str):
            self.doc.fail(
                path, f'expected an expression like "review_round < 2", got {describe(value)}'
            )
        try:
            return parse_when(value)
        except ValueError as exc:
            self.doc.fail(path, str(exc))

    def _has_transition(self, from_: str, to: str, path: str) -> None:
        if not any(t.from_ == from_ and t.to == to for t in self.transitions):
            self.doc.fail(
                path,
                f"no transition from {from_} to {to} (the monitor moves only along transitions)",
            )

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

    def _role(self, name: str, value: object, terminal: bool, path: str) -> Role | None:
        if value is None:
            return None
        if value not in _ROLES:
            self.doc.fail(path, f"expected one of {', '.join(_ROLES)}, got {value!r}")
        role = value
        if role in self.role_states:
            self.doc.fail(
                path,
                f"role {role} is already declared by states.{self.role_states[role]}; "
                "at most one state per role",
            )
        if role == "queue" and terminal:
            self.doc.fail(path, f'role queue needs a non-terminal state; "{name}" is terminal')
        if role != "queue" and not terminal:
            self.doc.fail(
                path, f'role {role} needs a terminal state; "{name}" is not (terminal: true)'
            )
        self.role_states[role] = name
        return role

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
        return Transition(from_, to, when, gate, hooks)

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

    def _gate(self, value: object, path: str) -> Gate:
        raw = self.doc.mapping(value, path, _GATE_KEYS, required=("section",))
        section = self.doc.string(raw["section"], join(path, "section"))
        if not section.startswith("## ") or not section[3:].strip():
            self.doc.fail(
                join(path, "section"),
                f'expected a level-2 heading like "## Handoff", got "{section}"',
            )
        required = self.doc.boolean(raw.get("required", True), join(path, "required"))
        fields = self.doc.strings(raw.get("fields"), join(path, "fields"))
        if "fields" in raw and not fields:
            self.doc.fail(join(path, "fields"), "list at least one field, or leave fields out")
        for index, name in enumerate(fields):
            if not _FIELD.fullmatch(name):
                self.doc.fail(join(join(path, "fields"), index), f'"{name}" is not a field name')
        verdict = raw.get("verdict")
        if verdict is not None:
            if not isinstance(verdict, str) or verdict.upper() not in ("PASS", "FAIL"):
                self.doc.fail(join(path, "verdict"), f"expected PASS or FAIL, got {verdict!r}")
            verdict = verdict.upper()
        if not required and (fields or verdict):
            self.doc.fail(join(path, "required"), "false cannot be combined with fields or verdict")
        return Gate(section.strip(), required, tuple(fields), cast("Verdict | None", verdict))

    # -- roles a file does not declare (see the module docstring) ---------------------------

    def _infer_roles(self, initial: Sequence[str], monitoring: ExitMonitoring) -> tuple[str, ...]:
        notes: list[str] = []

        def infer(role: Role, name: str | None) -> None:
            if role in self.role_states or name is None:
                return
            self.states[name] = replace(self.states[name], role=role)
            self.role_states[role] = name
            notes.append(f"{self.doc.source}: states.{name}: role not declared, inferred '{role}'")

        infer("queue", self._infer_queue(initial))
        infer("cancelled", self._free_terminal("cancelled"))
        infer("done", self._infer_done())
        for role in _ROLES:
            if role not in self.role_states:
                notes.append(
                    f"{self.doc.source}: states: no state has role '{role}' "
                    "(none declared, none inferred)"
                )
        if not self.declares_waiting:
            for name, state in list(self.states.items()):
                if self._seems_waiting(state, monitoring):
                    self.states[name] = replace(state, waits_for_human=True)
                    notes.append(
                        f"{self.doc.source}: states.{name}: waits_for_human not declared, "
                        "inferred true"
                    )
        return tuple(notes)

    def _infer_queue(self, initial: Sequence[str]) -> str | None:
        for name in initial:
            state = self.states[name]
            spawns = any(t.from_ == name and _spawns(t.hooks) for t in self.transitions)
            if state.agent == "none" and not state.on_enter and spawns:
                return name
        pending = self.states.get("pending")
        if pending is not None and not pending.terminal:
            return "pending"
        return None

    def _free_terminal(self, name: str) -> str | None:
        """``name`` if it is a terminal state without a role."""
        state = self.states.get(name)
        return name if state and state.terminal and state.role is None else None

    def _infer_done(self) -> str | None:
        named = self._free_terminal("done")
        if named is not None:
            return named
        ends = {
            t.to
            for t in self.transitions
            if self._free_terminal(t.to) and any(h.action == "release_workspace" for h in t.hooks)
        }
        return ends.pop() if len(ends) == 1 else None

    @staticmethod
    def _seems_waiting(state: State, monitoring: ExitMonitoring) -> bool:
        if state.terminal or state.role == "queue":
            return False
        rules = [r for r in monitoring.rules if r.status == state.name]
        if any(r.action != "mark_dead" for r in rules):
            return False
        return state.agent == "none" or bool(rules)

    # -- escalation and exit monitoring ------------------------------------------------------

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


def _spawns(hooks: Sequence[HookSpec]) -> bool:
    return any(h.action in ("spawn_agent", "spawn_reviewer") for h in hooks)
