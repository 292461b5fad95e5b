"""What every part of the workflow loader shares: the document, what has been read so
far, and the checks of references, ``when`` expressions and gates."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import cast

from orange.engine.when import When, parse_when
from orange.engine.workflow import Gate, Role, State, Transition, Verdict
from orange.engine.yamldoc import Doc, describe, join

_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_GATE_KEYS = ("section", "required", "fields", "verdict")


class LoaderBase:
    def __init__(self, doc: Doc) -> None:
        self.doc = doc
        self.states: dict[str, State] = {}
        self.prompts: dict[str, str] = {}
        self.transitions: list[Transition] = []
        self.role_states: dict[Role, str] = {}
        self.declares_waiting = False
        self.undeclared_by: set[int] = set()  # transitions without ``by:`` (their index)

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
