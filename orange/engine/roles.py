"""Status roles (``role: queue | done | cancelled``, ``waits_for_human: true``): a role
names at most one state; ``done`` and ``cancelled`` must be terminal, ``queue`` must
not, and a terminal state cannot wait for a human.  A file that declares no state with
some role (users' older files, copies committed in the tasks ref) gets it inferred, and
`Workflow.inferred_roles` says so (it also notes a role no state has, declared or
inferred); inference only considers states without a role:

- queue (not missed in a workflow where no move starts an agent: nothing to queue):
  the first of ``initial_statuses`` with no agent and no ``on_enter`` that has a
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

from collections.abc import Sequence
from typing import get_args

from orange.engine.actionspec import spawns
from orange.engine.loadbase import LoaderBase
from orange.engine.workflow import ExitMonitoring, Role, State

_ROLES: tuple[Role, ...] = get_args(Role)


class RoleInference(LoaderBase):
    """Status roles: checked where declared, inferred where not."""

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

    # -- roles a file does not declare (see the module docstring) ---------------------------

    def _infer_roles(self, initial: Sequence[str], monitoring: ExitMonitoring) -> tuple[str, ...]:
        notes: list[str] = []

        def infer(role: Role, name: str | None) -> None:
            if role in self.role_states or name is None:
                return
            self.states[name] = self.states[name]._replace(role=role)
            self.role_states[role] = name
            notes.append(f"{self.doc.source}: states.{name}: role not declared, inferred '{role}'")

        infer("queue", self._infer_queue(initial))
        infer("cancelled", self._free_terminal("cancelled"))
        infer("done", self._infer_done())
        for role in _ROLES:
            if role == "queue" and not self._starts_agents():
                continue  # nothing to queue: no move starts an agent (run-subtask)
            if role not in self.role_states:
                notes.append(
                    f"{self.doc.source}: states: no state has role '{role}' "
                    "(none declared, none inferred)"
                )
        if not self.declares_waiting:
            for name, state in list(self.states.items()):
                if self._seems_waiting(state, monitoring):
                    self.states[name] = state._replace(waits_for_human=True)
                    notes.append(
                        f"{self.doc.source}: states.{name}: waits_for_human not declared, "
                        "inferred true"
                    )
        return tuple(notes)

    def _starts_agents(self) -> bool:
        return any(spawns(t.hooks) for t in self.transitions) or any(
            spawns(state.on_enter) for state in self.states.values()
        )

    def _infer_queue(self, initial: Sequence[str]) -> str | None:
        for name in initial:
            state = self.states[name]
            starts = any(t.from_ == name and spawns(t.hooks) for t in self.transitions)
            if state.agent == "none" and not state.on_enter and starts:
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
