"""Artifact gates over a task body's markdown sections.

A section starts at a line ``## Name`` (exactly two ``#``) and runs to the next such
line or the end of the body; ``## `` lines inside fenced code blocks do not count.
Headings match ignoring case and surrounding whitespace.  When a heading occurs twice,
the last occurrence is the current one (earlier rounds live under renamed headings,
see `archive_section`).

Freshness: the engine records `fingerprints` of a state's gated sections when a task
enters it (the *baseline*); a section whose fingerprint still equals its baseline was
written before the state was entered and does not satisfy a gate.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from orange.engine.workflow import Gate, Verdict
from orange.errors import GateFailed

ABSENT = "absent"
REVIEW = "## Review"

# Placeholder text shown in gate errors, so an agent sees what a valid line looks like.
FIELD_EXAMPLES: Mapping[str, str] = {
    "DONE": "<what you finished>",
    "REMAINING": "<what is left to do>",
    "DECISIONS": "<choices you made and why>",
    "UNCERTAIN": "<what you are unsure about>",
    "APPROACH": "<how you will do it>",
    "TOUCHING": "<files or modules you will change>",
    "RISKS": "<what could go wrong>",
    "OUTCOME": "passed",
}

_FENCE = re.compile(r"\s{0,3}(`{3,}|~{3,})")
_EMPHASIS = re.compile(r"[*_`]")
_LIST_MARKER = re.compile(r"\s*(?:[-*+]|\d+[.)])\s+")
_VERDICT = re.compile(r"#*\s*verdict\s*:\s*(pass|fail)\s*[.!]?", re.IGNORECASE)


class _Span(NamedTuple):  # not a dataclass: see `orange.engine.workflow`
    """Offsets of one section: heading line at ``start``, content ``[body, end)``."""

    name: str
    start: int
    body: int
    end: int


class GateResult(NamedTuple):  # not a dataclass: see `orange.engine.workflow`
    """Outcome of `check_gate`; ``message`` is one line, empty when ``ok``."""

    ok: bool
    message: str = ""


def _key(heading: str) -> str:
    name = heading.strip()
    if name.startswith("## "):
        name = name[3:]
    return " ".join(name.split()).casefold()


def _spans(body: str) -> list[_Span]:
    spans: list[_Span] = []
    fence = ""
    offset = 0
    for line in body.splitlines(keepends=True):
        opener = _FENCE.match(line)
        if fence:
            if opener and opener[1][0] == fence[0] and len(opener[1]) >= len(fence):
                fence = ""
        elif opener:
            fence = opener[1]
        elif line.startswith("## ") or line.rstrip("\r\n") == "##":
            if spans:
                spans[-1] = _Span(spans[-1].name, spans[-1].start, spans[-1].body, offset)
            spans.append(_Span(line[2:].strip(), offset, offset + len(line), len(body)))
        offset += len(line)
    return spans


def _find(body: str, heading: str) -> _Span | None:
    key = _key(heading)
    matches = [span for span in _spans(body) if _key(span.name) == key]
    return matches[-1] if matches else None


def section(body: str, heading: str) -> str | None:
    """Content of the current section ``heading`` (without the heading line), stripped.

    ``None`` when there is no such section; ``""`` when it is there but empty.
    """
    span = _find(body, heading)
    return None if span is None else body[span.body : span.end].strip()


def fingerprint(body: str, heading: str) -> str:
    """A short hash of the section's normalised content, or ``"absent"``."""
    content = section(body, heading)
    if content is None:
        return ABSENT
    normal = "\n".join(line.rstrip() for line in content.splitlines())
    return hashlib.sha1(normal.encode()).hexdigest()[:12]


def fingerprints(body: str, headings: Iterable[str]) -> dict[str, str]:
    """The baseline for a state: heading -> `fingerprint`, for each heading given."""
    return {heading: fingerprint(body, heading) for heading in headings}


def section_verdict(content: str) -> Verdict | None:
    """``PASS``/``FAIL`` if the first non-empty line of ``content`` states a verdict."""
    for line in content.splitlines():
        if line.strip():
            match = _VERDICT.fullmatch(_EMPHASIS.sub("", line).strip())
            if match is None:
                return None
            return "PASS" if match[1].upper() == "PASS" else "FAIL"
    return None


def verdict(body: str) -> Verdict | None:
    """The verdict of the current ``## Review``: first non-empty line ``Verdict: X``."""
    content = section(body, REVIEW)
    return None if content is None else section_verdict(content)


def _has_field(content: str, fields: tuple[str, ...]) -> bool:
    names = "|".join(re.escape(name) for name in fields)
    pattern = re.compile(rf"[*_`]*({names})[*_`]*\s*:(.*)", re.IGNORECASE)
    for line in content.splitlines():
        marker = _LIST_MARKER.match(line)
        match = pattern.match(line[marker.end() :] if marker else line.lstrip())
        if match and _EMPHASIS.sub("", match[2]).strip():
            return True
    return False


def _field_example(fields: tuple[str, ...]) -> str:
    """``like "DONE: <what you finished>" (one of DONE/REMAINING/...)``."""
    first = fields[0]
    text = f'like "{first}: {FIELD_EXAMPLES.get(first, "<text>")}"'
    return text + (f" (one of {'/'.join(fields)})" if len(fields) > 1 else "")


def _example(gate: Gate) -> str:
    """What a valid section looks like, for the end of an error message."""
    if gate.verdict:
        return f'whose first line is "Verdict: {gate.verdict}"'
    if gate.fields:
        return f"with a line {_field_example(gate.fields)}"
    return "with some content under it"


def _baseline(baseline: Mapping[str, str], heading: str) -> str | None:
    if heading in baseline:
        return baseline[heading]
    key = _key(heading)
    return next((value for name, value in baseline.items() if _key(name) == key), None)


def check_gate(gate: Gate, body: str, baseline: Mapping[str, str]) -> GateResult:
    """Check ``gate`` against ``body``; ``baseline`` holds fingerprints at state entry."""
    heading = gate.section
    content = section(body, heading)
    if content is None:
        return GateResult(
            False, f'gate failed: TASK.md has no "{heading}" section; add one {_example(gate)}'
        )
    if not content:
        if not gate.required:
            return GateResult(True)
        return GateResult(False, f"gate failed: {heading} is empty; write it {_example(gate)}")
    if gate.fields and not _has_field(content, gate.fields):
        return GateResult(
            False, f"gate failed: {heading} needs a line {_field_example(gate.fields)}"
        )
    if gate.verdict:
        found = section_verdict(content)
        if found is None:
            return GateResult(
                False,
                f"gate failed: the first line of {heading} must be "
                '"Verdict: PASS" or "Verdict: FAIL"',
            )
        if found != gate.verdict:
            return GateResult(
                False,
                f"gate failed: {heading} verdict is {found}, this move needs {gate.verdict} "
                f'(first line "Verdict: {gate.verdict}")',
            )
    recorded = _baseline(baseline, heading)
    if recorded is not None and recorded == fingerprint(body, heading):
        return GateResult(
            False,
            f"gate failed: {heading} is stale (unchanged since the task entered its current "
            f"state); write it again for this round {_example(gate)}",
        )
    return GateResult(True)


def enforce_gate(gate: Gate, body: str, baseline: Mapping[str, str]) -> None:
    """Like `check_gate`, but raise `GateFailed` with its one-line message."""
    result = check_gate(gate, body, baseline)
    if not result.ok:
        raise GateFailed(result.message)


def _heading_line(name: str) -> str:
    return f"## {name.strip().removeprefix('## ').strip()}"


def set_section(body: str, heading: str, content: str) -> str:
    """Replace the current section's content, or append the section at the end.

    Every byte outside the replaced content (the heading line included) is kept.
    """
    text = content.strip("\n")
    span = _find(body, heading)
    if span is None:
        return _append_new(body, heading, text)
    head = body[: span.body]
    if not head.endswith("\n"):
        head += "\n"
    follows = span.end < len(body)
    region = f"\n{text}\n" if text else ""
    if follows:
        region += "\n"
    return head + region + body[span.end :]


def _append_new(body: str, heading: str, text: str) -> str:
    if not body or body.endswith("\n\n"):
        sep = ""
    elif body.endswith("\n"):
        sep = "\n"
    else:
        sep = "\n\n"
    tail = f"\n{text}\n" if text else ""
    return f"{body}{sep}{_heading_line(heading)}\n{tail}"


def append_to_section(body: str, heading: str, text: str) -> str:
    """Add ``text`` as a new paragraph at the end of a section (created if absent)."""
    span = _find(body, heading)
    addition = text.strip("\n")
    if span is None:
        return _append_new(body, heading, addition)
    existing = body[span.body : span.end].strip("\n")
    joined = f"{existing.rstrip()}\n\n{addition}" if existing.strip() else addition
    return set_section(body, heading, joined)


def archive_section(body: str, heading: str, label: str) -> str:
    """Rename every ``heading`` line to ``heading (label)``, e.g. ``## Review (round 1)``.

    The archived text stays readable but no longer counts as the current section.
    """
    key = _key(heading)
    out = body
    for span in reversed(_spans(body)):
        if _key(span.name) == key:
            line = out[span.start : span.body]
            ending = line[len(line.rstrip("\r\n")) :]
            renamed = f"{line.rstrip()} ({label}){ending}"
            out = out[: span.start] + renamed + out[span.body :]
    return out
