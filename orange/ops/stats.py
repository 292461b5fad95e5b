"""``orange stats``: what the tasks ref's history says about the work (issue 30).

From the history alone (`orange.store.ledgerwalk`: commit messages, cached by commit)
and the tasks as they are now (their harness and effort): tasks started, done and
cancelled; the first agent review's pass rate and the mean review rounds by harness and
effort; agent crashes per agent-hour; the time tasks spend in each status (median and
90th percentile); cost and tokens per done task by harness and by model; the most
expensive tasks.  ``since``: only commits from then on.  A history written by others is
counted as it is: every figure is what its commits claim.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from orange.engine.ledger import parse_money
from orange.engine.policy import POLICY
from orange.errors import InvalidInput
from orange.runtime.harness import load_harnesses
from orange.store import listing
from orange.store.ledgerwalk import Row, rows
from orange.store.store import TaskStore
from orange.store.task import Task

REVIEW = "agent-review"  # the shipped workflows' state an agent reviews in
SENT_BACK = ("working", "stuck")  # where a failed agent review sends the task
DONE, CANCELLED = "done", "cancelled"
RUN_STEP = "run.step"  # the event of every commit of an `orange run`'s record
TOP = 5
TOP_NAMES = 20  # harness names an error lists from the tasks


@dataclass
class TaskFacts:
    """What the history says about one task."""

    project: str
    task: str
    harness: str = ""
    effort: str = ""
    summary: str = ""
    created: bool = False
    ended: str = ""  # done or cancelled
    cost: Decimal = Decimal(0)
    unpriced: int = 0  # records without a cost
    tokens: int = 0
    seconds: int = 0
    crashes: int = 0
    reviews: int = 0
    first_review: bool | None = None  # passed (None: no agent review yet)
    models: dict[str, int] = field(default_factory=dict)  # tokens by model


@dataclass
class Stats:
    tasks: list[TaskFacts]
    in_status: dict[str, list[int]]  # status -> seconds spent there, per stay

    def report(self) -> dict[str, Any]:
        """The figures, as `--json` prints them."""
        facts = self.tasks
        done = [f for f in facts if f.ended == DONE]
        agent_hours = sum(f.seconds for f in facts) / 3600
        crashes = sum(f.crashes for f in facts)
        return {
            "tasks": {
                "started": sum(f.created for f in facts),
                "done": len(done),
                "cancelled": sum(f.ended == CANCELLED for f in facts),
            },
            "reviews": _by(facts, lambda f: f"{f.harness or '-'}/{f.effort or '-'}", _reviews),
            "crashes": {
                "count": crashes,
                "agent_hours": round(agent_hours, 2),
                "per_agent_hour": round(crashes / agent_hours, 3) if agent_hours else None,
            },
            "time_in_status": {
                status: {"stays": len(spans), "median_s": _pct(spans, 50), "p90_s": _pct(spans, 90)}
                for status, spans in sorted(self.in_status.items())
            },
            "done_by_harness": _by(done, lambda f: f.harness or "-", _spend),
            "done_by_model": _by(done, _model, _spend),
            "most_expensive": [
                {
                    "id": f.task,
                    "project": f.project,
                    "cost_usd": _money(f.cost),
                    "cost_unknown": f.unpriced > 0,
                    "tokens": f.tokens,
                    "summary": f.summary,
                }
                for f in sorted(facts, key=lambda f: (-f.cost, f.task))[:TOP]
                if f.cost
            ],
        }


def collect(
    stores: Iterable[tuple[str, TaskStore]], *, since: int | None = None, harness: str | None = None
) -> Stats:
    """The statistics of these projects' stores (name, store); ``since``: commits from
    that time (seconds since the epoch) on; ``harness``: only tasks of that harness."""
    scope = [
        (name, store, {t.id: t for t in listing.tasks(store.snapshot()) if isinstance(t, Task)})
        for name, store in stores
    ]
    if harness is not None:  # before the history is read: a typo costs no walk
        _check_harness(
            harness, {t.str_field("harness") for _, _, tasks in scope for t in tasks.values()}
        )
    facts: list[TaskFacts] = []
    in_status: dict[str, list[int]] = defaultdict(list)
    for name, store, current in scope:
        history = rows(store.pygit, store.repo.orange_dir())
        facts.extend(_facts(name, history, current, since, in_status, harness))
    return Stats(facts, dict(in_status))


def _check_harness(name: str, seen: set[str]) -> None:
    """Refuse a ``--harness`` that names neither a harness of this host's configuration
    nor one a task in scope ran with (a task may keep a harness since removed from the
    configuration): a typo would read as a harness with no work.  The tasks' names come
    from the ref: only those the field policy allows are named, and at most `TOP_NAMES`."""
    if name in seen:
        return
    valid = sorted(n for n in seen if n and POLICY["harness"].check(n) is None)
    known = sorted(set(load_harnesses()) | set(valid[:TOP_NAMES]))
    if name not in known:
        more = " ..." if len(valid) > TOP_NAMES else ""
        raise InvalidInput(f"unknown harness {name!r} (known: {', '.join(known)}{more})")


def _facts(
    project: str,
    history: list[Row],
    current: dict[str, Task],
    since: int | None,
    in_status: dict[str, list[int]],
    harness: str | None,
) -> list[TaskFacts]:
    by_task: dict[str, TaskFacts] = {}
    entered: dict[str, tuple[str, int]] = {}  # task -> (status, since when)
    for row in history:
        if row.event == RUN_STEP:
            continue  # a run's own record (its architect's usage): no task
        task = current.get(row.task)
        if harness is not None and (task is None or task.str_field("harness") != harness):
            continue
        if row.to_status and row.from_status:
            was = entered.get(row.task)
            if was is not None and was[0] == row.from_status and (since is None or was[1] >= since):
                in_status[was[0]].append(max(row.time - was[1], 0))
            entered[row.task] = (row.to_status, row.time)
        if since is not None and row.time < since:
            continue
        facts = by_task.get(row.task)
        if facts is None:
            facts = by_task[row.task] = _new(project, row.task, task)
        _add(facts, row)
    return list(by_task.values())


def _new(project: str, task_id: str, task: Task | None) -> TaskFacts:
    if task is None:
        return TaskFacts(project, task_id)
    return TaskFacts(
        project,
        task_id,
        harness=task.str_field("harness"),
        effort=task.str_field("effort"),
        summary=task.summary[:80],
    )


def _add(facts: TaskFacts, row: Row) -> None:
    if row.event == "task.created":
        facts.created = True
    if row.event == "agent.crashed":
        facts.crashes += 1
    if row.to_status in (DONE, CANCELLED):
        facts.ended = row.to_status
    if row.to_status == REVIEW:
        facts.reviews += 1
    if row.from_status == REVIEW and row.to_status and facts.first_review is None:
        facts.first_review = row.to_status not in SENT_BACK
    if row.cost or row.tokens_in or row.tokens_out:
        cost = parse_money(row.cost)
        facts.cost += cost or 0
        facts.unpriced += cost is None
        facts.tokens += row.tokens_in + row.tokens_out + row.cache
        facts.seconds += row.seconds
        facts.models[row.model] = facts.models.get(row.model, 0) + row.tokens_in + row.tokens_out


def _by(facts: Iterable[TaskFacts], key: Any, figures: Any) -> dict[str, Any]:
    groups: dict[str, list[TaskFacts]] = defaultdict(list)
    for fact in facts:
        groups[key(fact)].append(fact)
    return {name: figures(group) for name, group in sorted(groups.items())}


def _reviews(group: list[TaskFacts]) -> dict[str, Any]:
    reviewed = [f for f in group if f.first_review is not None]
    passed = sum(bool(f.first_review) for f in reviewed)
    rounds = [f.reviews for f in group if f.reviews]
    return {
        "reviewed": len(reviewed),
        "first_pass_rate": round(passed / len(reviewed), 3) if reviewed else None,
        "mean_rounds": round(sum(rounds) / len(rounds), 2) if rounds else None,
    }


def _spend(group: list[TaskFacts]) -> dict[str, Any]:
    """Cost per task over the tasks whose cost is known in full (a task with a record
    of unknown cost, an unpriced model or a harness without a usage reader, would read
    as cheaper than it was): None when there is none."""
    known = [f for f in group if not f.unpriced]
    cost = sum((f.cost for f in known), Decimal(0))
    return {
        "tasks": len(group),
        "cost_usd": _money(cost / len(known)) if known else None,
        "cost_unknown": len(group) - len(known),
        "tokens": sum(f.tokens for f in group) // len(group),
        "unpriced_records": sum(f.unpriced for f in group),
    }


def _model(fact: TaskFacts) -> str:
    return max(fact.models, key=lambda m: fact.models[m]) if fact.models else "-"


def _money(value: Decimal) -> str:
    return f"{value.quantize(Decimal('0.01'))}"


def _pct(values: list[int], percent: int) -> int | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, (len(ordered) * percent) // 100)]


def render(report: dict[str, Any]) -> list[str]:
    """The report as lines of text."""
    tasks = report["tasks"]
    lines = [
        f"tasks: {tasks['started']} started, {tasks['done']} done, {tasks['cancelled']} cancelled"
    ]
    crashes = report["crashes"]
    rate = crashes["per_agent_hour"]
    lines.append(
        f"crashes: {crashes['count']} in {crashes['agent_hours']} agent-hours"
        + (f" ({rate} an hour)" if rate is not None else "")
    )
    if report["reviews"]:
        lines.append("first agent review (harness/effort): passed, mean rounds")
        for name, fig in report["reviews"].items():
            rate_text = "-" if fig["first_pass_rate"] is None else f"{fig['first_pass_rate']:.0%}"
            lines.append(f"  {name}: {rate_text} of {fig['reviewed']}, {fig['mean_rounds'] or '-'}")
    if report["time_in_status"]:
        lines.append("time in status: median, 90th percentile")
        for status, fig in report["time_in_status"].items():
            lines.append(f"  {status}: {_duration(fig['median_s'])}, {_duration(fig['p90_s'])}")
    for title, key in (("harness", "done_by_harness"), ("model", "done_by_model")):
        if report[key]:
            lines.append(f"per done task by {title}: cost, tokens")
            for name, fig in report[key].items():
                cost = "cost unknown" if fig["cost_usd"] is None else f"${fig['cost_usd']}"
                unknown = (
                    f" (cost unknown for {fig['cost_unknown']} of {fig['tasks']})"
                    if fig["cost_unknown"] and fig["cost_usd"] is not None
                    else ""
                )
                lines.append(f"  {name}: {cost}, {fig['tokens']}{unknown}")
    if report["most_expensive"]:
        lines.append("most expensive:")
        for item in report["most_expensive"]:
            more = "+?" if item["cost_unknown"] else ""
            lines.append(f"  {item['id']} ${item['cost_usd']}{more} {item['summary']}")
    return lines


def _duration(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds / 3600:.1f}h"
