"""Prompt templates: literal substitution of a fixed set of task variables.

Only ``{summary} {project} {branch} {review_round} {status} {id} {harness}`` are
replaced (``{harness}``: the agent program's name, so a prompt can give the command line
of that program, e.g. self-review's review session), in a single pass, so a value
that itself contains ``{status}`` is not expanded again and any other braces
(``{foo}``, ``${HOME}``, JSON) stay exactly as written.  No ``str.format``: task data
is untrusted input.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

VARIABLES = ("summary", "project", "branch", "review_round", "status", "id", "harness")

_PLACEHOLDER = re.compile(r"\{(" + "|".join(VARIABLES) + r")\}")


def build_prompt(template: str, fields: Mapping[str, object]) -> str:
    """``template`` with each variable replaced by ``fields[name]``.

    A missing or null value becomes ``""``, except ``review_round`` which becomes ``0``.
    """

    def value(match: re.Match[str]) -> str:
        raw = fields.get(match[1])
        if raw is None:
            return "0" if match[1] == "review_round" else ""
        return str(raw)

    return _PLACEHOLDER.sub(value, template)
