"""A loaded workflow as frozen values: states, transitions, gates, hooks, exit rules.

`orange.engine.loader` builds these from YAML once, validated; nothing else in Orange
reads workflow YAML.  Mappings are read-only views that keep the file's order (the
first state is where tasks start by default).

Status roles are workflow data, so no layer outside the workflow needs to know a state
name: ``role: queue`` (the state ``spawn_next`` starts tasks from), ``role: done``
(where ``orange task merge`` moves), ``role: cancelled`` (where ``orange task cancel``
moves) and ``waits_for_human: true`` (a task there waits for a person).  A file that
does not declare them gets them inferred by the loader; `Workflow.inferred_roles` says
which were.

Each transition says who may take it (``by:``, any of `MOVERS`): an agent of the task
in its role (``worker``, ``reviewer``), a ``human``, or the ``engine`` (exit monitoring
and the crash rule's escalation).  A file without ``by:`` on a transition gets
`DEFAULT_BY` (plus ``engine`` where an exit rule moves along it), and
`Workflow.inferred_by` says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, NamedTuple

from orange.engine.when import When

Verdict = Literal["PASS", "FAIL"]
AgentWindow = Literal["worker", "reviewer", "none"]
RuleAction = Literal["crash", "mark_dead", "respawn"]
Role = Literal["queue", "done", "cancelled"]
Mover = Literal["worker", "reviewer", "human", "engine"]
MOVERS: tuple[Mover, ...] = ("worker", "reviewer", "human", "engine")
# Who takes a transition whose definition does not say (older files, copies in refs).
DEFAULT_BY: tuple[Mover, ...] = ("worker", "reviewer", "human")

# The model's values are named tuples, not frozen dataclasses: a dataclass is built by
# generated code at every process start (about half a millisecond each), and a status
# move loads this module.  Like the dataclasses they were, they are immutable and
# compare by value; mappings in them are read-only views.
_NO_PARAMS: Mapping[str, object] = MappingProxyType({})


class HookSpec(NamedTuple):
    """One hook list item: an action name and its parameters.

    ``params`` holds every parameter the action declares a default for (defaults filled
    in) plus the optional ones the file gave; see `orange.engine.actionspec`.
    """

    action: str
    params: Mapping[str, object] = _NO_PARAMS

    def get(self, name: str, default: object = None) -> object:
        return self.params.get(name, default)


class Gate(NamedTuple):
    """An artifact requirement on the task body (also the shape of ``has_artifact``).

    ``section`` is the heading as written, ``"## Handoff"``.  ``required`` false lets
    the section be empty (it must still exist); ``fields`` asks for at least one line
    ``FIELD: text``; ``verdict`` asks the first line of the section to be that verdict.
    """

    section: str
    required: bool = True
    fields: tuple[str, ...] = ()
    verdict: Verdict | None = None


class State(NamedTuple):
    """A status.  ``agent`` names the tmux window whose agent runs in this state.

    ``on_enter`` runs when a task is created directly in this state (for example in
    ``clarification`` or ``agent-review``), never on a transition into it.

    ``role`` and ``waits_for_human`` are what the workflow declares or, for a file that
    declares none, what the loader inferred (see `Workflow`).
    """

    name: str
    terminal: bool = False
    respawn_prompt: str | None = None
    agent: AgentWindow = "none"
    on_enter: tuple[HookSpec, ...] = ()
    role: Role | None = None
    waits_for_human: bool = False


class Transition(NamedTuple):
    """A legal move ``from_ -> to``; ``when`` guards it, ``gate`` checks the body,
    ``by`` says who may take it (in `MOVERS` order)."""

    from_: str
    to: str
    when: When | None = None
    gate: Gate | None = None
    hooks: tuple[HookSpec, ...] = ()
    by: tuple[Mover, ...] = DEFAULT_BY


class Branch(NamedTuple):
    """One ``then_when`` item: advance to ``then`` when ``when`` holds."""

    when: When
    then: str


class ExitRule(NamedTuple):
    """What the monitor does when the agent of a task in ``status`` has died.

    Exactly one of three kinds: ``has_artifact`` set (matches when that gate holds on a
    fresh artifact), ``no_artifact`` true (matches when no ``has_artifact`` rule of the
    status matched) or neither (matches whenever the status does).  Exactly one
    outcome: ``then``, ``then_when`` or ``action``.  ``stuck_after`` is the crash count
    at which a ``crash`` (or counting ``respawn``) escalates.
    """

    status: str
    has_artifact: Gate | None = None
    no_artifact: bool = False
    then: str | None = None
    then_when: tuple[Branch, ...] = ()
    action: RuleAction | None = None
    stuck_after: int | None = None

    @property
    def is_fallback(self) -> bool:
        """True for ``no_artifact`` and status-only rules."""
        return self.has_artifact is None


class ExitMonitoring(NamedTuple):
    poll_interval: int = 30
    rules: tuple[ExitRule, ...] = ()


class Escalation(NamedTuple):
    """The crash rule's monitor-only move to ``to`` from any active state."""

    to: str
    hooks: tuple[HookSpec, ...] = ()


class Workflow(NamedTuple):
    """A validated workflow.  ``source_text`` is the exact YAML it was loaded from.

    ``inferred_by`` holds one warning per transition without ``by:``.
    ``inferred_roles`` holds one warning per role or ``waits_for_human`` flag the file
    did not declare and the loader inferred, as ``<source>: states.<name>: ...``, and
    one per role no state has at all (``<source>: states: no state has role ...``);
    ``orange workflow validate`` prints them.  Empty when the file declares every role.
    """

    name: str
    version: int
    description: str
    states: Mapping[str, State]
    transitions: tuple[Transition, ...]
    exit_monitoring: ExitMonitoring
    prompts: Mapping[str, str]
    initial_statuses: tuple[str, ...]
    empty_summary_status: str | None
    escalation: Escalation | None
    source: str
    source_text: str
    inferred_roles: tuple[str, ...] = ()
    inferred_by: tuple[str, ...] = ()

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the loader inferred (roles, ``by:``): `orange workflow validate` says it."""
        return self.inferred_roles + self.inferred_by

    @property
    def initial_status(self) -> str:
        """Where ``task create`` puts a task unless told otherwise."""
        return self.initial_statuses[0]

    def transitions_between(self, from_: str, to: str) -> tuple[Transition, ...]:
        """All transitions ``from_ -> to`` in file order (several when ``when`` splits)."""
        return tuple(t for t in self.transitions if t.from_ == from_ and t.to == to)

    def movers(self, from_: str, to: str) -> tuple[Mover, ...]:
        """Who may take some transition ``from_ -> to`` (empty when there is none)."""
        found = {who for t in self.transitions_between(from_, to) for who in t.by}
        return tuple(who for who in MOVERS if who in found)

    def has_transition(self, from_: str, to: str) -> bool:
        return any(t.from_ == from_ and t.to == to for t in self.transitions)

    def targets_from(self, status: str) -> list[str]:
        """The statuses ``task update`` may move to from ``status``, in file order."""
        return list(dict.fromkeys(t.to for t in self.transitions if t.from_ == status))

    def is_terminal(self, status: str) -> bool:
        """True for a terminal state; False for an active or unknown one."""
        state = self.states.get(status)
        return state is not None and state.terminal

    @property
    def terminal_states(self) -> frozenset[str]:
        """Every terminal state: a task there is finished and runs nothing."""
        return frozenset(name for name, state in self.states.items() if state.terminal)

    @property
    def queue_state(self) -> str | None:
        """The state (``role: queue``) where tasks wait for a free workspace.

        ``spawn_next`` starts the oldest task of the project in this state; None when the
        workflow has no queue (then ``spawn_next`` starts nothing).
        """
        return self._role_state("queue")

    @property
    def done_state(self) -> str | None:
        """The terminal state (``role: done``) ``orange task merge`` moves a task to."""
        return self._role_state("done")

    @property
    def cancelled_state(self) -> str | None:
        """The terminal state (``role: cancelled``) ``orange task cancel`` moves to."""
        return self._role_state("cancelled")

    def _role_state(self, role: Role) -> str | None:
        return next((name for name, s in self.states.items() if s.role == role), None)

    def waits_for_human(self, status: str) -> bool:
        """True when a task in ``status`` waits for a person (``waits_for_human: true``).

        For example clarification (questions to answer), reviewing (a human reviews),
        stuck (a human decides).  False for an agent's, terminal or unknown status.
        """
        state = self.states.get(status)
        return state is not None and state.waits_for_human

    def request_changes_target(self, status: str) -> str | None:
        """Where a human sends a task in ``status`` back with changes; None if nowhere.

        A human's send-back move is derived.  It is a transition ``status -> to`` where

        - a human may take it (``human`` in its ``by:``),
        - ``status`` waits for a human (`waits_for_human`),
        - ``to`` does not itself wait for a human and its agent is the worker
          (``agent: worker``, the default of a state with a ``respawn_prompt``; so ``to``
          is not terminal, as a terminal state runs no agent),
        - and its hooks wake that worker: ``notify_worker`` (the live worker is told) or
          ``spawn_agent`` with ``harness: task`` (a fresh worker starts).

        A move without such a hook is one the agent of ``status`` makes itself (default:
        ``clarification -> planning``, after the discussion); a move to a waiting state is
        a hand-over, not a send-back (default: ``stuck -> reviewing``).  The first match
        in file order wins.
        """
        if not self.waits_for_human(status):
            return None
        for t in self.transitions:
            target = self.states[t.to] if t.from_ == status else None
            if (
                target is not None
                and "human" in t.by
                and not target.waits_for_human
                and target.agent == "worker"
                and any(_wakes_worker(h) for h in t.hooks)
            ):
                return t.to
        return None

    def active_states(self) -> tuple[str, ...]:
        """The non-terminal states, in file order."""
        return tuple(name for name, state in self.states.items() if not state.terminal)

    def rules_for(self, status: str) -> tuple[ExitRule, ...]:
        """Exit-monitoring rules of ``status``, in file order."""
        return tuple(r for r in self.exit_monitoring.rules if r.status == status)

    def gated_sections(self, status: str) -> tuple[str, ...]:
        """Headings whose freshness matters in ``status``.

        Those named by gates of transitions out of ``status`` and by its
        ``has_artifact`` rules; the engine fingerprints them when a task enters
        ``status``.
        """
        headings = [t.gate.section for t in self.transitions if t.from_ == status and t.gate]
        headings += [r.has_artifact.section for r in self.rules_for(status) if r.has_artifact]
        return tuple(dict.fromkeys(headings))


def _wakes_worker(hook: HookSpec) -> bool:
    """True for a hook that tells the worker to act: notify it, or start a new one."""
    if hook.action == "notify_worker":
        return True
    return hook.action == "spawn_agent" and hook.get("harness", "task") == "task"
