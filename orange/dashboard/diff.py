"""A task branch's diff as lines a reviewer can comment on, and the comments as one
``request-changes`` message (file, line, the quoted code, the comment).  Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


class DiffLine(NamedTuple):
    """One line of the diff; ``path``/``line`` place it in the new file (``line`` 0:
    a header, or a removed line, placed at the hunk's position)."""

    kind: str  # file, hunk, add, del, ctx
    text: str
    path: str
    line: int


class Comment(NamedTuple):
    path: str
    line: int
    code: str
    text: str


def parse(diff: str) -> list[DiffLine]:
    """The lines of a unified diff (``git diff``), each placed in its file."""
    out: list[DiffLine] = []
    path, line = "", 0
    for raw in diff.splitlines():
        if raw.startswith("diff --git "):
            path = raw.rsplit(" b/", 1)[-1]
            out.append(DiffLine("file", raw, path, 0))
        elif raw.startswith(("+++ ", "--- ", "index ", "new file", "deleted file", "similarity")):
            if raw.startswith("+++ b/"):
                path = raw[6:]
            continue
        elif (match := _HUNK.match(raw)) is not None:
            line = int(match.group(1))
            out.append(DiffLine("hunk", raw, path, line))
        elif raw.startswith("+"):
            out.append(DiffLine("add", raw, path, line))
            line += 1
        elif raw.startswith("-"):
            out.append(DiffLine("del", raw, path, line))
        else:
            out.append(DiffLine("ctx", raw, path, line))
            line += 1
    return out


def hunk_of(lines: list[DiffLine], index: int) -> list[DiffLine]:
    """The lines of the hunk that holds ``lines[index]`` (the hunk itself, from a
    ``hunk`` header)."""
    start = index
    while start > 0 and lines[start].kind not in ("hunk", "file"):
        start -= 1
    end = start + 1
    while end < len(lines) and lines[end].kind not in ("hunk", "file"):
        end += 1
    return lines[start:end]


def comment_on(lines: list[DiffLine], index: int, text: str) -> Comment:
    """A comment on ``lines[index]``: on a hunk header, the whole hunk is quoted."""
    target = lines[index]
    if target.kind == "hunk":
        code = "\n".join(d.text for d in hunk_of(lines, index)[1:])
    else:
        code = target.text
    return Comment(target.path, target.line, code, text.strip())


def feedback(comments: Iterable[Comment]) -> str:
    """The comments as one message for ``request-changes``."""
    parts = ["Review comments on the diff:"]
    for comment in comments:
        quoted = "\n".join(f"    > {code}" for code in comment.code.splitlines())
        parts.append(f"- {comment.path}:{comment.line}\n{quoted}\n  {comment.text}")
    return "\n".join(parts)
