"""Who may take each transition (``by:``): read, completed where a file says nothing,
and checked against the exit rules, which the engine carries out.

- ``by:`` lists any of ``worker``, ``reviewer``, ``human``, ``engine`` (at least one,
  none twice); anything else is a load error naming the key.
- A transition without ``by:`` gets `DEFAULT_BY`, plus ``engine`` when the engine
  moves along it (an exit rule, or ``spawn_next`` starting a task of the queue state),
  so an older definition (or a copy committed in the tasks ref) keeps working; one
  warning line per such transition says what was inferred.
- Exit rules and ``spawn_next`` move as the engine.  A transition that declares
  ``by:`` without ``engine`` while one of them moves along it is a load error, not a warning: the
  rule could never fire, and a user wants to hear that when loading the file rather
  than find it out when an agent dies.
"""

from __future__ import annotations

from collections.abc import Mapping

from orange.engine.actionspec import spawns
from orange.engine.loadbase import LoaderBase
from orange.engine.workflow import DEFAULT_BY, MOVERS, ExitMonitoring, Mover
from orange.engine.yamldoc import join


class MoverRules(LoaderBase):
    """``by:`` on transitions: checked where declared, inferred where not."""

    def _by(self, raw: Mapping[str, object], path: str) -> tuple[Mover, ...] | None:
        """The declared movers in `MOVERS` order, or None when ``by`` is absent."""
        if "by" not in raw:
            return None
        key = join(path, "by")
        names = self.doc.strings(raw["by"], key)
        if not names:
            self.doc.fail(key, f"list at least one of {', '.join(MOVERS)}")
        for index, name in enumerate(names):
            if name not in MOVERS:
                self.doc.fail(
                    join(key, index), f"expected one of {', '.join(MOVERS)}, got {name!r}"
                )
        return tuple(who for who in MOVERS if who in names)

    def _settle_by(self, monitoring: ExitMonitoring) -> tuple[str, ...]:
        """Fill in undeclared ``by:`` and check the exit rules' moves; the warnings."""
        engine_moves: dict[tuple[str, str], str] = {}  # (from, to) -> the rule's key
        for index, rule in enumerate(monitoring.rules):
            path = join("exit_monitoring.rules", index)
            if rule.then is not None:
                engine_moves.setdefault((rule.status, rule.then), join(path, "then"))
            for number, branch in enumerate(rule.then_when):
                branch_path = join(join(join(path, "then_when"), number), "then")
                engine_moves.setdefault((rule.status, branch.then), branch_path)
        self._spawn_next_move(engine_moves)
        notes: list[str] = []
        for index, t in enumerate(self.transitions):
            rule_path = engine_moves.get((t.from_, t.to))
            if index in self.undeclared_by:
                by: tuple[Mover, ...] = DEFAULT_BY + (("engine",) if rule_path else ())
                self.transitions[index] = t._replace(by=by)
                notes.append(
                    f"{self.doc.source}: transitions[{index}] ({t.from_} -> {t.to}): "
                    f"by not declared, inferred [{', '.join(by)}]"
                )
            elif rule_path is not None and "engine" not in t.by:
                self.doc.fail(
                    rule_path,
                    f"moves {t.from_} -> {t.to} as the engine, but "
                    f"transitions[{index}].by does not list engine; add engine there",
                )
        return tuple(notes)

    def _spawn_next_move(self, engine_moves: dict[tuple[str, str], str]) -> None:
        """``spawn_next`` starts a task of the queue state by its starting move (the
        first out of it that spawns an agent), as the engine."""
        queue = self.role_states.get("queue")
        all_hooks = [h for t in self.transitions for h in t.hooks]
        if queue is None or not any(h.action == "spawn_next" for h in all_hooks):
            return
        for index, t in enumerate(self.transitions):
            if t.from_ == queue and spawns(t.hooks):
                path = f"spawn_next (transitions[{index}].hooks)"
                engine_moves.setdefault((t.from_, t.to), path)
                return
