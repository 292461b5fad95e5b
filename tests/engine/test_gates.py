"""Markdown sections, verdicts, gate checks with freshness, and byte-preserving edits."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from orange.engine.gates import (
    append_to_section,
    archive_section,
    check_gate,
    enforce_gate,
    fingerprint,
    fingerprints,
    section,
    set_section,
    verdict,
)
from orange.engine.workflow import Gate
from orange.errors import GateFailed

HANDOFF = Gate("## Handoff", fields=("DONE", "REMAINING", "DECISIONS", "UNCERTAIN"))
PLAN = Gate("## Plan", fields=("APPROACH", "TOUCHING"))
PASS = Gate("## Review", verdict="PASS")
FAIL = Gate("## Review", verdict="FAIL")

BODY = """## Context

Make the thing.

## Plan

APPROACH: rewrite it
### Detail (a level-3 heading stays inside the section)
more

## Notes
"""


def test_section_content_runs_to_next_level_two_heading() -> None:
    assert section(BODY, "## Plan") == (
        "APPROACH: rewrite it\n### Detail (a level-3 heading stays inside the section)\nmore"
    )
    assert section(BODY, "## Context") == "Make the thing."


def test_section_missing_and_empty() -> None:
    assert section(BODY, "## Handoff") is None
    assert section(BODY, "## Notes") == ""


def test_heading_match_ignores_case_and_accepts_bare_name() -> None:
    assert section("## handoff  \nDONE: x\n", "## Handoff") == "DONE: x"
    assert section("## Handoff\nDONE: x\n", "Handoff") == "DONE: x"


def test_heading_inside_code_fence_does_not_start_a_section() -> None:
    body = "## Handoff\nDONE: x\n```md\n## Review\nVerdict: PASS\n```\n"
    assert section(body, "## Review") is None
    assert "Verdict: PASS" in (section(body, "## Handoff") or "")


def test_last_occurrence_is_current() -> None:
    body = "## Review\nVerdict: FAIL\n\n## Review\nVerdict: PASS\n"
    assert verdict(body) == "PASS"


class VerdictCase(NamedTuple):
    name: str
    first_line: str
    expected: str | None


VERDICTS = [
    VerdictCase("plain pass", "Verdict: PASS", "PASS"),
    VerdictCase("plain fail", "Verdict: FAIL", "FAIL"),
    VerdictCase("lower case", "verdict: pass", "PASS"),
    VerdictCase("bold line", "**Verdict: PASS**", "PASS"),
    VerdictCase("underscored label", "__Verdict:__ fail", "FAIL"),
    VerdictCase("italic mixed case", "*verdict: Pass*", "PASS"),
    VerdictCase("code span", "`Verdict: FAIL`", "FAIL"),
    VerdictCase("spaces", "  Verdict :   PASS  ", "PASS"),
    VerdictCase("trailing period", "Verdict: PASS.", "PASS"),
    VerdictCase("unfilled template", "Verdict: PASS/FAIL", None),
    VerdictCase("other word", "Verdict: PASSED", None),
    VerdictCase("prose first", "Looks good overall. Verdict: PASS", None),
    VerdictCase("bare word", "PASS", None),
]


@pytest.mark.parametrize("case", VERDICTS, ids=[c.name for c in VERDICTS])
def test_verdict_forms(case: VerdictCase) -> None:
    body = f"## Notes\nVerdict: PASS\n\n## Review\n\n{case.first_line}\n\nDetails.\n"
    assert verdict(body) == case.expected


def test_verdict_only_from_first_non_empty_line() -> None:
    assert verdict("## Review\nSome notes\nVerdict: PASS\n") is None
    assert verdict("## Review\n") is None
    assert verdict("no review at all") is None


class GateCase(NamedTuple):
    name: str
    gate: Gate
    body: str
    message: str | None  # None: the gate holds


GATES = [
    GateCase("handoff ok", HANDOFF, "## Handoff\nDONE: the parser\n", None),
    GateCase("field in list item, bold", HANDOFF, "## Handoff\n- **DONE:** parser\n", None),
    GateCase("field lower case", HANDOFF, "## Handoff\nremaining: docs\n", None),
    GateCase(
        "absent",
        HANDOFF,
        "## Notes\nhi\n",
        'gate failed: TASK.md has no "## Handoff" section; add one with a line like '
        '"DONE: <what you finished>" (one of DONE/REMAINING/DECISIONS/UNCERTAIN)',
    ),
    GateCase(
        "empty",
        HANDOFF,
        "## Handoff\n\n## Notes\nx\n",
        "gate failed: ## Handoff is empty; write it with a line like",
    ),
    GateCase(
        "field without content",
        HANDOFF,
        "## Handoff\nDONE:\nREMAINING:   \n**DONE:**\n",
        'gate failed: ## Handoff needs a line like "DONE: <what you finished>" '
        "(one of DONE/REMAINING/DECISIONS/UNCERTAIN)",
    ),
    GateCase(
        "unknown field only",
        PLAN,
        "## Plan\nIDEA: stuff\n",
        'gate failed: ## Plan needs a line like "APPROACH: <how you will do it>"',
    ),
    GateCase("no fields asked", Gate("## Notes"), "## Notes\nanything\n", None),
    GateCase("pass ok", PASS, "## Review\nVerdict: PASS\n", None),
    GateCase(
        "wrong verdict",
        PASS,
        "## Review\nVerdict: FAIL\nbad\n",
        "gate failed: ## Review verdict is FAIL, this move needs PASS",
    ),
    GateCase(
        "no verdict",
        FAIL,
        "## Review\nnot sure\n",
        'gate failed: the first line of ## Review must be "Verdict: PASS" or "Verdict: FAIL"',
    ),
    GateCase("optional empty", Gate("## Notes", required=False), "## Notes\n", None),
    GateCase(
        "optional still needs heading",
        Gate("## Notes", required=False),
        "text\n",
        'gate failed: TASK.md has no "## Notes" section',
    ),
]


@pytest.mark.parametrize("case", GATES, ids=[c.name for c in GATES])
def test_check_gate(case: GateCase) -> None:
    result = check_gate(case.gate, case.body, {})
    if case.message is None:
        assert result.ok, result.message
        assert result.message == ""
    else:
        assert not result.ok
        assert result.message.startswith(case.message)
        assert "\n" not in result.message


def test_enforce_gate_raises_one_line_with_example() -> None:
    with pytest.raises(GateFailed) as info:
        enforce_gate(HANDOFF, "## Handoff\nsome prose\n", {})
    assert str(info.value) == (
        'gate failed: ## Handoff needs a line like "DONE: <what you finished>" '
        "(one of DONE/REMAINING/DECISIONS/UNCERTAIN)"
    )
    enforce_gate(HANDOFF, "## Handoff\nDONE: x\n", {})  # holds: no exception


def test_stale_artifact_fails_and_a_rewrite_passes() -> None:
    old = "## Handoff\nDONE: round one\n"
    baseline = fingerprints(old, ["## Handoff"])
    stale = check_gate(HANDOFF, old, baseline)
    assert not stale.ok
    assert "## Handoff is stale" in stale.message
    # Whitespace-only edits do not make it fresh.
    assert not check_gate(HANDOFF, "## Handoff\n\nDONE: round one   \n\n", baseline).ok
    fresh = set_section(old, "## Handoff", "DONE: round two")
    assert check_gate(HANDOFF, fresh, baseline).ok


def test_missing_baseline_entry_is_not_stale() -> None:
    body = "## Handoff\nDONE: x\n"
    assert check_gate(HANDOFF, body, {"## Plan": fingerprint(body, "## Plan")}).ok
    assert check_gate(HANDOFF, body, {"## Handoff": "absent"}).ok


def test_baseline_key_matches_heading_loosely() -> None:
    body = "## Review\nVerdict: PASS\n"
    assert not check_gate(PASS, body, {"## review": fingerprint(body, "## Review")}).ok


def test_fingerprint() -> None:
    assert fingerprint("text", "## Review") == "absent"
    one = fingerprint("## Review\nVerdict: PASS\n", "## Review")
    assert len(one) == 12
    assert one == fingerprint("## Review\r\n\r\nVerdict: PASS  \r\n", "## Review")
    assert one != fingerprint("## Review\nVerdict: FAIL\n", "## Review")


def test_set_section_replaces_content_and_keeps_every_other_byte() -> None:
    body = "intro  \n\n## Plan\nold\n\n## Notes\n  keep  this\r\n\n"
    out = set_section(body, "## Plan", "APPROACH: new")
    assert out == "intro  \n\n## Plan\n\nAPPROACH: new\n\n## Notes\n  keep  this\r\n\n"
    assert section(out, "## Plan") == "APPROACH: new"


def test_set_section_last_section_and_heading_without_newline() -> None:
    assert set_section("## Plan\nold\n", "## Plan", "new") == "## Plan\n\nnew\n"
    assert set_section("x\n## Plan", "## Plan", "new") == "x\n## Plan\n\nnew\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("", "## Review\n\nVerdict: PASS\n"),
        ("text", "text\n\n## Review\n\nVerdict: PASS\n"),
        ("text\n", "text\n\n## Review\n\nVerdict: PASS\n"),
        ("text\n\n", "text\n\n## Review\n\nVerdict: PASS\n"),
    ],
    ids=["empty body", "no newline", "one newline", "blank line"],
)
def test_set_section_appends_missing_section(body: str, expected: str) -> None:
    assert set_section(body, "## Review", "Verdict: PASS") == expected


def test_append_to_section() -> None:
    body = "## Notes\nfirst\n\n## Plan\nAPPROACH: a\n"
    out = append_to_section(body, "## Notes", "second")
    assert out == "## Notes\n\nfirst\n\nsecond\n\n## Plan\nAPPROACH: a\n"
    assert append_to_section("", "## Notes", "only") == "## Notes\n\nonly\n"
    assert append_to_section("## Notes\n", "## Notes", "x") == "## Notes\n\nx\n"


def test_archive_section_keeps_text_but_not_as_current() -> None:
    body = "## Handoff\nDONE: x\n\n## Review\nVerdict: FAIL\nfix it\n"
    out = archive_section(body, "## Review", "round 1")
    assert out == "## Handoff\nDONE: x\n\n## Review (round 1)\nVerdict: FAIL\nfix it\n"
    assert verdict(out) is None
    assert fingerprint(out, "## Review") == "absent"
    assert section(out, "## Review (round 1)") == "Verdict: FAIL\nfix it"
    assert archive_section("no review\n", "## Review", "round 1") == "no review\n"
