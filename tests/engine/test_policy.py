"""The field policy's checks of values Orange itself writes (`orange.engine.policy`)."""

from __future__ import annotations

from orange.engine.fields import IDENTITY_FIELDS
from orange.engine.policy import IDENTITY, RUN_POLICY, field_problem


def test_a_workflow_field_set_to_true_or_false_is_legal() -> None:
    """`set_field` takes any scalar: a flag a workflow's hook sets is no forgery."""
    assert field_problem(None, {"approved": True}, ["approved"]) is None
    assert field_problem({"approved": True}, {"approved": False}, ["approved"]) is None


def test_a_run_id_of_digits_only_is_a_run_id() -> None:
    """Run ids are drawn from 0-9a-z: eight digits happen (about 1 run in 28,000)."""
    assert field_problem(None, {"id": "12345678"}, (), RUN_POLICY) is None
    assert field_problem(None, {"id": "ABCDEFGH"}, (), RUN_POLICY) == "id is not a run id"


def test_the_identity_fields_are_the_ones_the_engine_guards() -> None:
    """`orange.engine.fields` names them for the store's hot paths, the table for the
    checks: one list, written twice, held equal here."""
    assert IDENTITY == IDENTITY_FIELDS
