"""The run itself: seed 004's checkpoint steps, each one a commit of the run's record.

`Runner.go` starts from the step the record holds and does every step after it, so a
new run and a resumed one are the same code: a finished step is never done again, a
clarification goes on from its last committed turn, and the waves go on from the
current parallel group (`orange.run.waves` skips every subtask already done).

A step that fails marks the run ``failed`` with the step to resume at; one that cannot
go on for want of an answer (the answers file ran out) leaves it ``running`` with no
runner, which `run list` shows as ``interrupted``: both resume with `orange run resume`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TypeVar

from orange import compose
from orange.errors import BrokenTaskFile, InvalidInput
from orange.projects import Project
from orange.run import state
from orange.run.ask import AnswersExhausted, is_affirmative
from orange.run.contracts import Clarify, ContractError, Plan, parse_clarify, parse_plan
from orange.run.headless import AgentFailed, AgentTimeout
from orange.run.prompts import CLARIFY, PLAN, history_text, plan_json
from orange.run.record import ARCHITECT, RunCancelled, RunFailed, RunRecord
from orange.runtime import workspace
from orange.runtime.git import GitFailed, git
from orange.runtime.workspace import has_origin
from orange.store.runfile import RunFile
from orange.store.task import Task

T = TypeVar("T")
CONFIRM = "Are you satisfied with the requirement? (yes to proceed)"


def slug(request: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", request.lower()).strip("-")
    return (words[:40].rstrip("-") or "run") if words else "run"


def run_branch(request: str, run_id: str) -> str:
    return f"swe-team/{slug(request)}-{run_id}"


class Runner(RunRecord):
    """Carries one run of one project forward, step by step."""

    # -- the whole run ---------------------------------------------------------------
    def go(self) -> RunFile:
        """Do every step from the record's on; returns the final record."""
        run = self.record()
        step = str(run.fields.get("step") or "QUEUED")
        if run.fields.get("status") == "failed":
            step = str(run.fields.get("resume_step") or step)
            run = self.update("resumed", lambda r: r.fields.update(status="running", error=None))
        try:
            self._from(step)
        except RunCancelled:
            return self.record()
        except AnswersExhausted as exc:  # the run stays running, with no runner: resumable
            raise InvalidInput(str(exc)) from None
        except (RunFailed, AgentFailed, AgentTimeout, ContractError, GitFailed) as exc:
            return self.fail(step_now=str(self.record().fields.get("step")), error=str(exc))
        return self.record()

    def fail(self, *, step_now: str, error: str) -> RunFile:
        message = " ".join(error.split())
        self.event("step", step_now, "failed", message)

        def change(run: RunFile) -> None:
            run.fields.update(status="failed", resume_step=step_now, error=message)

        return self.update(f"failed at {step_now.lower()}", change)

    def _from(self, step: str) -> None:
        at = state.step_index(step)
        if at <= state.step_index("QUEUED"):
            self.repo_sync()
        if at <= state.step_index("REPO_SYNC"):
            self.make_worktree()
        self.ensure_worktree()
        if at <= state.step_index("WORKSPACE_CREATED"):
            self.make_branch()
        if at <= state.step_index("CLARIFYING"):
            self.clarify()
        if at <= state.step_index("PLANNING"):
            self.plan()
        if at <= state.step_index("PLANNED"):
            self.create_subtasks()
        if at <= state.step_index("SUBTASK_DONE"):
            # Imported here: waves load the thread pool and the merge code, which the
            # run's other commands (list, show, cancel) never need.
            from orange.run.waves import Waves

            Waves(self).run_all()
        if at <= state.step_index("CREATING_PR"):
            self.finish()

    # -- setup steps -----------------------------------------------------------------
    def repo_sync(self) -> None:
        """A `git fetch` of origin (never a pull into the user's checkout)."""
        self.check_cancelled()
        note = "no remote to fetch"
        if has_origin(self.project.path):
            try:
                git(
                    "fetch",
                    "--quiet",
                    "origin",
                    "+refs/heads/*:refs/remotes/origin/*",
                    cwd=self.project.path,
                    timeout=300,
                )
                note = "fetched origin"
            except GitFailed as exc:
                note = f"could not fetch origin ({exc.message}); using local refs"
        self.step("REPO_SYNC", note)

    def make_worktree(self) -> None:
        self.ensure_worktree()
        self.step("WORKSPACE_CREATED", "the run's worktree")

    def ensure_worktree(self) -> None:
        """The run's own worktree (a local folder, re-made if it went missing)."""
        if (self.worktree / ".git").exists():
            return
        base = str(self.record().fields.get("base") or self.project.default_branch)
        workspace.ensure_worktree(self.project, self.worktree, base)

    def make_branch(self) -> None:
        run = self.record()
        branch, base = str(run.fields["branch"]), str(run.fields["base"])
        leftover = git("status", "--porcelain", cwd=self.worktree)
        if leftover:  # seed 004: "stash leftovers" (a merge a killed runner left)
            if git(
                "rev-parse", "--quiet", "--verify", "MERGE_HEAD", cwd=self.worktree, check=False
            ):
                git("merge", "--abort", cwd=self.worktree, check=False)
            git("stash", "push", "--include-untracked", "-m", "orange run", cwd=self.worktree)
        current = git("symbolic-ref", "--quiet", "--short", "HEAD", cwd=self.worktree, check=False)
        if current != branch:
            exists = git(
                "rev-parse",
                "--verify",
                "--quiet",
                f"refs/heads/{branch}",
                cwd=self.project.path,
                check=False,
            )
            args = (branch,) if exists else ("-b", branch, _start_of(self.project, base))
            git("checkout", "--quiet", "--no-track", *args, cwd=self.worktree)
        self.step("BRANCH_CREATED", branch)

    # -- clarification ---------------------------------------------------------------
    def clarify(self) -> None:
        run = self.record()
        if run.fields.get("skip_clarification"):
            self.step("CLARIFIED", "clarification skipped")
            return
        history: list[dict[str, str]] = list(run.json_section("Clarification") or [])
        rounds = sum(1 for h in history if h.get("role") == "assistant")
        limit = state.number(run.fields, "max_clarification_rounds", 10)
        request = run.text("Request")
        if str(run.fields.get("step")) != "CLARIFYING":
            self.step("CLARIFYING", "asking the architect")
        while rounds < limit:
            self.check_cancelled()
            answer = self.pending() or self.architect(
                CLARIFY.format(request=request, history=history_text(history)), parse_clarify
            )
            # Kept until answered: a run resumed while a question waits asks it again
            # without asking the architect again.
            self.keep_pending(answer)
            if self.converse(answer, history):
                return
            rounds += 1
        self.step("CLARIFIED", f"{limit} clarification rounds used")

    def keep_pending(self, answer: Clarify) -> None:
        def change(run: RunFile) -> None:
            run.set_json("Pending", answer._asdict())

        self.update("the architect asks", change)

    def pending(self) -> Clarify | None:
        try:
            return parse_clarify(json.dumps(self.record().json_section("Pending")))
        except (ContractError, BrokenTaskFile):
            return None

    def converse(self, answer: Clarify, history: list[dict[str, str]]) -> bool:
        """One turn: show, ask, commit the log; True when the requirement is confirmed."""
        self.asker.show(answer.message)
        reply = self.asker.ask(CONFIRM if answer.status == "ready" else "Your answer:")
        used = getattr(self.asker, "consumed", 0)
        if answer.status == "ready" and is_affirmative(reply):
            self.event("step", "CLARIFIED", "done", "requirement confirmed")

            def confirmed(run: RunFile) -> None:
                run.fields.update(step="CLARIFIED", answers_used=used)
                run.set_json("Requirement", answer.message)
                run.sections.pop("Pending", None)

            self.update("clarified", confirmed)
            return True
        history += [{"role": "assistant", "text": answer.message}, {"role": "user", "text": reply}]

        def turn(run: RunFile) -> None:
            run.fields.update(step="CLARIFYING", answers_used=used)
            run.set_json("Clarification", history)
            run.sections.pop("Pending", None)

        self.update(f"clarification turn {len(history) // 2}", turn)
        return False

    # -- planning --------------------------------------------------------------------
    def plan(self) -> None:
        self.check_cancelled()
        run = self.step("PLANNING", "asking the architect for a plan")
        plan = self.architect(PLAN.format(request=self.requirement(run)), parse_plan)
        group_of = {sid: n for n, group in enumerate(plan.groups) for sid in group}
        branch = str(run.fields["branch"])

        def planned(run: RunFile) -> None:
            run.set_json("Plan", plan_json(plan))
            run.fields.update(step="PLANNED", group=0)
            run.fields["subtasks"] = [
                {
                    "id": s.id,
                    "task": None,
                    "branch": f"{branch}-agent-{n}",
                    "group": group_of[s.id] + 1,
                    "status": "planned",
                    "iterations": 0,
                    "retries": 0,
                    "note": "",
                }
                for n, s in enumerate(plan.subtasks, 1)
            ]

        self.event("step", "PLANNED", "done", f"{len(plan.subtasks)} subtasks")
        self.update(f"planned {len(plan.subtasks)} subtasks in {len(plan.groups)} groups", planned)

    def create_subtasks(self) -> None:
        # Imported here: creating tasks loads the workflow catalog and the engine's task
        # helpers, which a resumed run past this step never needs.
        from orange.run.subtasks import create_missing

        create_missing(self)
        run = self.record()
        agents_n = min(state.number(run.fields, "agents", 2) or 2, self.project.pool_size)
        self.step("AGENTS_SPAWNED", f"{agents_n} agents over a pool of {self.project.pool_size}")

    # -- finishing -------------------------------------------------------------------
    def finish(self) -> None:
        run = self.record()
        if run.fields.get("no_pr"):
            self.step("COMPLETED", "merged; no PR (--no-pr)", status="completed", error=None)
            return
        self.check_cancelled()
        run = self.step("CREATING_PR", "pushing the run's branch")
        url = compose.gh().create_pr(
            self.project, _pr_task(run, self.requirement(run), self.the_plan())
        )
        self.step("COMPLETED", url, status="completed", pr_url=url, error=None)

    # -- agents ----------------------------------------------------------------------
    def architect(self, prompt: str, parse: Callable[[str], T]) -> T:
        return self.ask(self.settings.architect, prompt, parse, who=ARCHITECT, cwd=self.worktree)


def _start_of(project: Project, base: str) -> str:
    """Where the run's branch starts: origin's ``base`` when the local one is missing."""
    for ref in (f"refs/heads/{base}", f"refs/remotes/origin/{base}"):
        if git("rev-parse", "--verify", "--quiet", ref, cwd=project.path, check=False):
            return ref.removeprefix("refs/heads/")
    raise RunFailed(f"no branch {base!r} to start the run from")


def _pr_task(run: RunFile, requirement: str, plan: Plan) -> Task:
    """The PR's title and body, as a task `create_pr` takes (title: summary; body: the
    ``## Handoff`` section; head: the run's branch; base: the run's base)."""
    first = requirement.strip().splitlines()[0] if requirement.strip() else run.id
    outcomes = []
    entries = {e["id"]: e for e in run.subtasks()}
    for s in plan.subtasks:
        entry = entries.get(s.id, {})
        note = f" ({entry.get('note')})" if entry.get("note") else ""
        outcomes.append(f"- **{s.title}** (`{s.id}`): {entry.get('status', '?')}{note}")
    body = (
        f"## Handoff\n\n{requirement.strip()}\n\n### Subtasks\n\n"
        + "\n".join(outcomes)
        + f"\n\nMade by `orange run` {run.id}.\n"
    )
    fields = {"id": run.id, "branch": run.fields["branch"], "summary": first[:200]}
    fields["base"] = run.fields.get("base")
    return Task(fields=fields, body=body)
