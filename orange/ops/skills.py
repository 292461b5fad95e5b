"""The skills `orange install` gives the coding agents (Agent Skills format: a folder
with a ``SKILL.md`` whose YAML frontmatter has ``name`` and ``description``).

The files are written and read back with python-frontmatter: a skill already installed
with the same name, description and text is left alone, however its frontmatter is
laid out.
"""

from __future__ import annotations

from dataclasses import dataclass

import frontmatter


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str

    def render(self) -> str:
        post = frontmatter.Post(self.body, name=self.name, description=self.description)
        return frontmatter.dumps(post) + "\n"

    def matches(self, text: str) -> bool:
        """Whether ``text`` (an installed SKILL.md) is this skill."""
        try:
            post = frontmatter.loads(text)
        except Exception:  # not frontmatter Orange can read: write ours
            return False
        metadata = {"name": self.name, "description": self.description}
        return dict(post.metadata) == metadata and post.content == self.body.strip()


TASK = Skill(
    name="orange-task",
    description=(
        "How to work on an Orange task as its worker or its reviewer. Use whenever your "
        "prompt mentions an Orange task, TASK.md, or `orange task` commands."
    ),
    body="""\
# Working on an Orange task

Orange gave you one task and a git worktree of your own. The task is `TASK.md` at the
root of the worktree (`ORANGE-TASK.md` if your prompt says so): frontmatter, then
markdown sections. Edit it in place; Orange keeps it in step with its own copy.

Status changes go through `orange task update --status STATUS` (the task id defaults to
this worktree's; if your shell says `orange: command not found`, run `"$ORANGE_BIN"`
instead of `orange`). Orange checks each change against the task's workflow and tells you
what is missing; fix that and run the command again. Never edit the frontmatter fields
`status`, `review_round` or `crash_count` by hand.

Never `git push` and never merge: commit on the task branch and leave the rest to the
human. Never post to GitHub.

## As the worker

1. Read `TASK.md`: the summary, any context, and any `## Review` or feedback from an
   earlier round.
2. Unclear requirements: write `## Questions` with two or three specific questions, run
   `orange task update --status clarification`, and wait for the human.
3. Plan: write

       ## Plan
       APPROACH: <how you will do it>
       TOUCHING: <files or modules you will change>

   then `orange task update --status working`.
4. Implement. Run the tests and linters. Commit with descriptive messages.
5. Hand off: write

       ## Handoff
       DONE: <what you finished>
       REMAINING: <what is left, or "nothing">
       DECISIONS: <choices you made and why>
       UNCERTAIN: <what you are unsure about>

   then ask for review: `orange task update --status agent-review` (in the
   self-review workflow: `orange task complete`, or `orange task stuck --reason "..."`
   when you cannot finish). Never set `reviewing` yourself: a reviewer does that.
6. When Orange tells you a review failed, read the new `## Review`, fix, and hand off
   again.

## As the reviewer

1. Read `TASK.md` (`## Plan`, `## Handoff`) and review the branch's commits against the
   default branch: correctness, tests, style, edge cases. Do not change the code.
2. Write `## Review`. Its first line is exactly `Verdict: PASS` or `Verdict: FAIL`;
   then your findings, most important first, each with file and line.
3. PASS: `orange task update --status reviewing`. FAIL: `orange task update --status
   working` (the worker is told to fix it).
""",
)

ORCHESTRATOR = Skill(
    name="orange-orchestrator",
    description=(
        "Break a request into parallel Orange tasks and watch them run. Use when the user "
        "asks you to plan, split up, delegate or orchestrate work with Orange."
    ),
    body="""\
# Orchestrating with Orange

You decompose work; you do not plan the implementation. Each task's own agent plans
and implements it.

1. Refine vague requests first: ask the user clarifying questions and wait for the
   answers.
2. Break the work into independent tasks that can run in parallel, each with a clear
   one-line summary and its own branch.
3. Create each task, passing requirements and constraints on stdin:

       orange task create BRANCH "summary" --context - <<'EOF'
       requirements, constraints, pointers to code
       EOF

   An empty summary starts a clarification session instead.
4. Watch progress with `orange task list` (and `orange task show ID` for one task).
   Tasks in `reviewing` wait for the human; tell the user which ones are ready.
""",
)

SKILLS = (TASK, ORCHESTRATOR)
