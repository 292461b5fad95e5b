"""Three-way merges of text: lines (a small diff3) and a body's ``## `` sections.

Pure functions of (base, ours, theirs), symmetric in ours and theirs, with no I/O: the
sync merge (`orange.store.taskmerge`) uses them for a task's body, so every clone and
the server compute the same body.
"""

from __future__ import annotations

from difflib import SequenceMatcher

_HEADING = "## "


def merge_lines(base: list[str], ours: list[str], theirs: list[str]) -> list[str] | None:
    """The lines of a clean three-way merge, or None when ours and theirs change the
    same region differently (a conflict).  Regions are cut at base lines both sides
    kept; a region changed on one side only takes that side."""
    in_ours, in_theirs = _matches(base, ours), _matches(base, theirs)
    out: list[str] = []
    i = j = k = 0
    for line in range(len(base) + 1):
        stable = line == len(base) or (line in in_ours and line in in_theirs)
        if not stable:
            continue
        end_j = in_ours.get(line, len(ours))
        end_k = in_theirs.get(line, len(theirs))
        chunk = _resolve(base[i:line], ours[j:end_j], theirs[k:end_k])
        if chunk is None:
            return None
        out += chunk
        if line < len(base):
            out.append(base[line])
        i, j, k = line + 1, end_j + 1, end_k + 1
    return out


def _matches(base: list[str], other: list[str]) -> dict[int, int]:
    """Base line index → the index of the same line in ``other`` (a longest matching)."""
    found: dict[int, int] = {}
    matcher = SequenceMatcher(None, base, other, autojunk=False)
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            found[block.a + offset] = block.b + offset
    return found


def _resolve(base: list[str], ours: list[str], theirs: list[str]) -> list[str] | None:
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    return None


def split_sections(body: str) -> list[tuple[str, str]]:
    """A body as (key, text) pairs: the text before the first ``## `` heading (key
    ``""``), then one pair per level-two heading, its text running to the next one.  A
    heading used twice is keyed with its occurrence (``## Notes#2``).  Joining the
    texts gives the body back exactly."""
    parts: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    key, lines = "", list[str]()
    for line in body.splitlines(keepends=True):
        if line.startswith(_HEADING):
            if lines or key:
                parts.append((key, "".join(lines)))
            name = line.rstrip("\r\n").rstrip()
            seen[name] = seen.get(name, 0) + 1
            key = name if seen[name] == 1 else f"{name}#{seen[name]}"
            lines = [line]
        else:
            lines.append(line)
    if lines or key:
        parts.append((key, "".join(lines)))
    return parts


def merge_text(base: str, ours: str, theirs: str) -> str | None:
    """A section's text merged line by line, or None on a conflict."""
    merged = merge_lines(
        base.splitlines(keepends=True),
        ours.splitlines(keepends=True),
        theirs.splitlines(keepends=True),
    )
    return None if merged is None else "".join(merged)
