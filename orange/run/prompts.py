"""What a run asks its architect and SWE agents (seed 004): each prompt names the JSON
contract of its answer (`orange.run.contracts`), so the agent knows the shape it owes."""

from __future__ import annotations

import json
from collections.abc import Sequence

from orange.run.contracts import Plan, parse_plan

CLARIFY = """\
You are the architect of a change to this repository (your working directory).
Decide whether the request below is clear enough to plan; if not, ask the user.

# Request
{request}

# Conversation so far
{history}

Answer with only one JSON object:
{{"status": "questions", "message": "<your questions to the user>"}}
or, once the requirement is clear,
{{"status": "ready", "message": "<the complete, refined requirement>"}}
"""

PLAN = """\
You are the architect of a change to this repository (your working directory).
Split the requirement below into subtasks that separate engineers can implement, each
in its own branch, and order them in parallel groups: the subtasks of one group run at
the same time; a later group starts from the merged work of the earlier ones.

# Requirement
{request}

Answer with only one JSON object:
{{"subtasks": [{{"id": "short-id", "title": "...", "description": "what to build"}}],
 "parallel_groups": [["short-id", ...], ...]}}
Every subtask is in exactly one group.
"""

IMPLEMENT = """\
You are a software engineer working in this repository (your working directory, on
branch {branch}). Implement this subtask of a larger change, with tests.

# The whole change
{request}

# Your subtask: {title}
{description}

Edit the files; you may commit, and anything left uncommitted is committed for you.
Do not push. Say briefly what you did.
"""

FEEDBACK = """\
You are a software engineer working in this repository (your working directory, on
branch {branch}), on the subtask "{title}":
{description}

Your last attempt needs more work:
{feedback}

Fix it. Edit the files; anything left uncommitted is committed for you. Do not push.
"""

CONFLICT = """\
You are a software engineer working in this repository (your working directory, on
branch {branch}), on the subtask "{title}".

Your branch could not be merged into the run's branch {run_branch}: {report}
The run's branch has been merged into yours here and the conflicts are left in the
files. Resolve them so that both changes work, and commit the merge.
"""

TESTS = """\
You are a software engineer working in this repository (your working directory, on
branch {branch}). Run the project's tests for the subtask "{title}" and report.

Answer with only one JSON object:
{{"passed": true or false, "output": "<the relevant test output>"}}
"""

REVIEW = """\
You are the architect reviewing one subtask of a change to this repository.

# The whole change
{request}

# The subtask: {title}
{description}

# Its diff against {base}
```diff
{diff}
```

Answer with only one JSON object:
{{"approved": true or false, "feedback": "<what must change, or why it is good>"}}
"""

MAX_DIFF = 60 * 1024  # characters of diff in a review prompt (argv caps one at 128 KB)


def history_text(history: Sequence[dict[str, str]]) -> str:
    if not history:
        return "(none yet)"
    names = {"assistant": "Architect", "user": "User"}
    return "\n\n".join(f"{names.get(h['role'], h['role'])}: {h['text']}" for h in history)


def plan_json(plan: Plan) -> dict[str, object]:
    return {
        "subtasks": [s._asdict() for s in plan.subtasks],
        "parallel_groups": [list(g) for g in plan.groups],
    }


def plan_from_json(data: object) -> Plan:
    """The plan as the record keeps it (written by `plan_json`, checked when parsed)."""
    return parse_plan(json.dumps(data))


def clipped_diff(diff: str) -> str:
    if len(diff) <= MAX_DIFF:
        return diff
    return diff[:MAX_DIFF] + f"\n... ({len(diff) - MAX_DIFF} more characters not shown)"
