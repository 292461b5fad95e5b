"""The waves of a run: each parallel group's subtasks at once over up to N agents, then
the group's branches merged into the run's branch, so the next group starts from them.

Per subtask (seed 004 "Single Subtask Execution"), one iteration is: implement (or
apply feedback) → harvest what the agent left uncommitted → its test report (JSON) →
on failure, feedback → the architect's review of the diff (JSON) → if not approved,
feedback; up to the run's ``max_iterations``.  Each state is a commit of the run's
record, and the subtask's task moves along the ``run-subtask`` workflow.  A resumed
run skips every subtask already approved or done, and restarts one caught mid-way at
the iteration it was in (its work so far is on its branch).

Failure policies, as seed 004: ``retry`` (once more with the error as context, then
as ``continue``), ``continue`` (the subtask is given up, ``failed``, and why is
recorded), ``stop`` (the subtask is ``blocked`` and the run fails; resume retries it).
A conflict merging a subtask's branch is a failure of that subtask: its retry merges
the run's branch into the subtask's and asks its agent to resolve the conflict.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from orange.engine.engine import Engine
from orange.errors import HookFailed, OrangeError
from orange.run import state
from orange.run.contracts import ContractError, Subtask, parse_review, parse_tests
from orange.run.headless import AgentFailed, AgentTimeout
from orange.run.prompts import CONFLICT, FEEDBACK, IMPLEMENT, REVIEW, TESTS, clipped_diff
from orange.run.record import RunFailed, RunRecord
from orange.runtime.git import GitFailed, git
from orange.runtime.places import pool_path
from orange.runtime.ready import port_of, slot_env
from orange.runtime.workspace import PoolFull
from orange.store.runfile import RunFile
from orange.store.task import Task

POOL_WAIT = 2.0  # seconds between looks for a free worktree
SETTLED = ("approved", "done", "failed")


class SubtaskFailed(Exception):
    """A subtask did not get through (its agent failed, or not approved in time)."""


class Waves:
    def __init__(self, runner: RunRecord) -> None:
        self.runner = runner
        plan = runner.the_plan()
        self.plan = {s.id: s for s in plan.subtasks}
        self.groups = plan.groups

    def run_all(self) -> None:
        start = state.number(self.runner.record().fields, "group", 0)
        for n in range(start, len(self.groups)):
            self.runner.check_cancelled()
            stopped = self.wave(n)
            stopped += self.merge(n)
            self.runner.check_cancelled()
            if stopped:
                raise RunFailed(f"subtask {stopped[0]} failed and the policy is stop")
            self.runner.step(
                "SUBTASK_DONE", f"wave {n + 1} of {len(self.groups)} merged", group=n + 1
            )
        self.runner.step("MERGING_AGENTS", "every wave merged into the run's branch")

    def wave(self, n: int) -> list[str]:
        """Run the group's unsettled subtasks; the ids the policy stopped on."""
        run = self.runner.record()
        todo = [sid for sid in self.groups[n] if state.subtask(run, sid)["status"] not in SETTLED]
        agents_n = max(1, min(state.number(run.fields, "agents", 2), self.runner.project.pool_size))
        self.runner.step(
            "SUBTASK_IMPLEMENTING",
            f"wave {n + 1} of {len(self.groups)}: {len(todo)} subtasks, {agents_n} agents",
        )
        with ThreadPoolExecutor(max_workers=agents_n) as pool:
            outcomes = list(pool.map(self.attempt, todo))
        return [sid for sid, stopped in zip(todo, outcomes, strict=True) if stopped]

    def attempt(self, sid: str) -> bool:
        """One subtask under the run's failure policy; True if the run must stop."""
        work = Work(self, sid, self.runner.make_engine())
        entry = state.subtask(self.runner.record(), sid)
        context = None
        if entry.get("status") == "conflict":
            context = str(entry.get("note") or "")
        return work.under_policy(context, conflict=context is not None)

    def merge(self, n: int) -> list[str]:
        """Merge the group's approved branches (plan order) into the run's branch."""
        stopped: list[str] = []
        for sid in self.groups[n]:
            while state.subtask(self.runner.record(), sid)["status"] == "approved":
                report = self.merge_one(sid)
                if report is None:
                    break
                work = Work(self, sid, self.runner.make_engine())
                if work.failed(report, conflict=True):
                    stopped.append(sid)
                    break
        return stopped

    def merge_one(self, sid: str) -> str | None:
        """Merge one branch (``--no-ff``); a conflict is aborted and reported."""
        entry = state.subtask(self.runner.record(), sid)
        tree = self.runner.worktree
        branch = str(entry["branch"])
        try:
            git(
                "merge",
                "--no-ff",
                "--no-edit",
                "-m",
                f"Merge subtask {sid} ({branch})",
                f"refs/heads/{branch}",
                cwd=tree,
            )
        except GitFailed:
            files = git("diff", "--name-only", "--diff-filter=U", cwd=tree, check=False)
            git("merge", "--abort", cwd=tree, check=False)
            names = ", ".join(files.split()) or "(no file named)"
            report = f"merging {branch} conflicts in {names}"
            self.runner.event("subtask", "MERGING_AGENTS", "conflict", report, sub=sid)
            return report
        self.runner.event("subtask", "MERGING_AGENTS", "merged", branch, sub=sid)
        engine = self.runner.make_engine()
        _move(engine, state.own_task(engine.store, self.runner.run_id, sid), "done")
        self.runner.update(
            f"subtask {sid} merged", lambda r: state.set_subtask(r, sid, status="done", note="")
        )
        return None


class Work:
    """One subtask, worked on in its own thread with its own engine."""

    def __init__(self, waves: Waves, sid: str, engine: Engine) -> None:
        self.waves = waves
        self.runner = waves.runner
        self.sid = sid
        self.engine = engine
        self.spec: Subtask = waves.plan[sid]

    # -- the record ------------------------------------------------------------------
    def entry(self) -> dict[str, Any]:
        return state.subtask(self.runner.record(), self.sid)

    def set(self, step: str, status: str, message: str = "", **values: Any) -> None:
        self.runner.event("subtask", step, status, message, sub=self.sid)
        sid = self.sid

        def change(run: RunFile) -> None:
            run.fields["step"] = step
            state.set_subtask(run, sid, status=status, **values)

        self.runner.update(f"subtask {sid} {status}" + (f" ({message})" if message else ""), change)

    # -- the policy ------------------------------------------------------------------
    def under_policy(self, context: str | None, *, conflict: bool = False) -> bool:
        try:
            self.work(context, conflict=conflict, fresh=False)
            return False
        except SubtaskFailed as exc:
            return self.failed(str(exc), conflict=conflict)

    def failed(self, reason: str, *, conflict: bool = False) -> bool:
        """The policy on a failed attempt (a merge conflict is one: under ``retry`` its
        agent resolves it once, under ``continue`` it is given up); True: stop the run."""
        policy = str(self.runner.record().fields.get("policy") or "retry")
        self.runner.check_cancelled()
        if policy == "retry" and state.number(self.entry(), "retries", 0) == 0:
            self.set("SUBTASK_FEEDBACK", "retrying", reason, retries=1)
            context = reason if conflict else f"Your previous attempt failed: {reason}"
            try:
                self.work(context, conflict=conflict, fresh=True)
                return False
            except SubtaskFailed as exc:
                reason = str(exc)
            self.runner.check_cancelled()
        if policy == "stop":  # a conflict shows as one, for resume to send to the agent
            self.give_up("blocked", reason, shown="conflict" if conflict else "blocked")
            return True
        self.give_up("failed", reason)
        return False

    def give_up(self, status: str, reason: str, shown: str | None = None) -> None:
        try:
            _move(self.engine, self.task_id(), status)
        except OrangeError as exc:
            reason += f" (and the task could not move to {status}: {exc})"
        self.set("SUBTASK_DONE", shown or status, reason, note=reason[:500])

    # -- one attempt -----------------------------------------------------------------
    def work(self, context: str | None, *, conflict: bool, fresh: bool) -> None:
        """Iterations until approved; raises SubtaskFailed."""
        try:
            self._iterate(context, conflict=conflict, fresh=fresh)
        except (AgentFailed, AgentTimeout, ContractError, HookFailed, GitFailed) as exc:
            raise SubtaskFailed(str(exc)) from None

    def _iterate(self, context: str | None, *, conflict: bool, fresh: bool) -> None:
        entry = self.entry()
        limit = state.number(self.runner.record().fields, "max_iterations", 3) or 3
        # A subtask the policy stopped on starts its iterations again on resume: one
        # stopped at the limit would otherwise fail again without an agent called.
        blocked = entry.get("status") == "blocked"
        done = 0 if fresh or conflict or blocked else state.number(entry, "iterations", 0)
        if entry.get("status") not in ("planned", "feedback", "blocked", "approved") and done:
            done -= 1  # caught mid-iteration by a crash: that iteration again
        task, path = self.bind()
        if conflict and context is not None:
            self.start_conflict(path)
        feedback = context
        while done < limit:
            self.runner.check_cancelled()
            done += 1
            feedback = self.iteration(task, path, done, feedback, conflict)
            conflict = False
            if feedback is None:
                return
        raise SubtaskFailed(f"not approved after {limit} iterations: {_short(feedback or '')}")

    def iteration(
        self, task: Task, path: Path, n: int, feedback: str | None, conflict: bool
    ) -> str | None:
        """One iteration; the feedback for the next (None: approved)."""
        self.set("SUBTASK_IMPLEMENTING", "implementing", f"iteration {n}", iterations=n)
        _move(self.engine, task.id, "implementing")
        self.swe(task, path, self.implement_prompt(task, feedback, conflict))
        self.set("SUBTASK_COMMITTING", "committing", f"iteration {n}")
        harvest(path, self.sid)
        self.set("SUBTASK_TESTING", "testing", f"iteration {n}")
        _move(self.engine, task.id, "testing")
        prompt = TESTS.format(branch=task.branch, title=self.spec.title)
        report = self.runner.ask(
            self.runner.settings.swe,
            prompt,
            parse_tests,
            who=self.sid,
            cwd=path,
            env=self.env(task),
        )
        if not report.passed:
            self.set("SUBTASK_FEEDBACK", "feedback", "tests failed")
            return f"The tests failed:\n{report.output}"
        self.set("SUBTASK_REVIEWING", "reviewing", f"iteration {n}")
        _move(self.engine, task.id, "reviewing")
        review = self.review(task, path)
        if review.approved:
            _move(self.engine, task.id, "approved")
            self.set("SUBTASK_DONE", "approved", f"iteration {n}", note="")
            return None
        self.set("SUBTASK_FEEDBACK", "feedback", "changes requested")
        return f"The architect's review asks for changes:\n{review.feedback}"

    def implement_prompt(self, task: Task, feedback: str | None, conflict: bool) -> str:
        request = self.runner.requirement(self.runner.record())
        words = {"branch": task.branch, "title": self.spec.title}
        if conflict:
            run_branch = str(self.runner.record().fields["branch"])
            return CONFLICT.format(**words, run_branch=run_branch, report=feedback or "")
        if feedback is None:
            return IMPLEMENT.format(**words, request=request, description=self.spec.description)
        return FEEDBACK.format(**words, description=self.spec.description, feedback=feedback)

    def review(self, task: Task, path: Path) -> Any:
        run = self.runner.record()
        base = str(run.fields["branch"])
        diff = git("diff", f"refs/heads/{base}...HEAD", cwd=path, check=False)
        prompt = REVIEW.format(
            request=self.runner.requirement(run),
            title=self.spec.title,
            description=self.spec.description,
            base=base,
            diff=clipped_diff(diff) or "(no changes)",
        )
        return self.runner.ask(
            self.runner.settings.architect, prompt, parse_review, who=f"{self.sid}.review", cwd=path
        )

    def swe(self, task: Task, path: Path, prompt: str) -> None:
        """The SWE's turn: what it says is in its log; what it did is in the worktree."""
        self.runner.ask(
            self.runner.settings.swe, prompt, _any_text, who=self.sid, cwd=path, env=self.env(task)
        )

    def env(self, task: Task) -> dict[str, str]:
        name = task.str_field("workspace")
        port = port_of(self.runner.project, name) if name else None
        return {**slot_env(task.id, name, port), "ORANGE_RUN": self.runner.run_id}

    # -- the worktree ----------------------------------------------------------------
    def task_id(self) -> str:
        """The subtask's task: the one this host created for it, never the record's word."""
        return state.own_task(self.engine.store, self.runner.run_id, self.sid)

    def task(self) -> Task:
        return self.engine.store.get(self.task_id())

    def bind(self) -> tuple[Task, Path]:
        """The subtask's task in ``implementing`` with a worktree bound (waiting, and
        saying so, while the pool has none free)."""
        task = self.task()
        waited = False
        while task.status in ("planned", "blocked", "approved"):
            try:
                task = _move(self.engine, task.id, "implementing")
            except PoolFull as exc:
                if not waited:
                    self.set("SUBTASK_IMPLEMENTING", "waiting", f"for a worktree: {exc.message}")
                    waited = True
                self.runner.check_cancelled()
                time.sleep(POOL_WAIT)
        path = pool_path(self.runner.project.name, task.str_field("workspace"))
        if path is None or not path.is_dir():
            raise SubtaskFailed(f"task {task.id} has no worktree here")
        return task, path

    def start_conflict(self, path: Path) -> None:
        """Merge the run's branch into the subtask's, leaving the conflicts in the files
        for the agent (a merge still open from before a crash is kept)."""
        if git("rev-parse", "--quiet", "--verify", "MERGE_HEAD", cwd=path, check=False):
            return
        run_branch = str(self.runner.record().fields["branch"])
        git("merge", "--no-edit", f"refs/heads/{run_branch}", cwd=path, check=False)


def harvest(path: Path, sid: str) -> None:
    """Commit whatever the agent left uncommitted (an open merge included)."""
    if not git("status", "--porcelain", cwd=path):
        return
    git("add", "--all", cwd=path)
    git(
        "commit",
        "--quiet",
        "--no-verify",
        "-m",
        f"subtask {sid}: the agent's uncommitted work",
        cwd=path,
    )


def _move(engine: Engine, task_id: str, to: str) -> Task:
    task = engine.store.get(task_id)
    if task.status == to:
        return task
    # force: a release keeps the worktree's work under refs/orange/snapshots/ (the
    # subtask's commits are on its branch anyway; the run keeps every branch).
    # offline: no claim pushed to a sync remote before binding a worktree: a run
    # belongs to the host that started it (its record says which), a push per
    # subtask would make every run depend on the network, and a lost claim would
    # leave the subtask where it was with nobody to say so.
    return engine.transition(task_id, to, options={"force": True, "offline": True}).task


def _any_text(text: str) -> str:
    return text


def _short(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= 300 else one[:297] + "..."
