"""``orange run``: one request taken to a PR by an architect and SWE agents (seed 004).

``orange run REQUEST`` starts a run; ``list``, ``show``, ``resume`` and ``cancel`` are
subcommands beside it.  A first argument that is not a subcommand is the request (the
group below inserts the hidden ``start``), and ``orange run -- list`` runs a request
that is literally "list".
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

import typer
from typer._click.core import Context
from typer._click.formatting import HelpFormatter
from typer.core import TyperGroup

from orange.cli.context import current_project
from orange.cli.output import emit_json, visible
from orange.compose import build_engine
from orange.engine.ledger import BUDGET, UNKNOWN_COST, cost_of, money, tokens_of
from orange.errors import BrokenTaskFile, InvalidInput, NotFound, OrangeError
from orange.home import orange_home
from orange.projects import Project
from orange.run import control, state
from orange.run.ask import Asker, FileAsker, TerminalAsker
from orange.run.progress import progress_for
from orange.run.spending import Spent, spent_by
from orange.store.layout import valid_task_id
from orange.store.runfile import RunFile
from orange.store.task import Task

HELP = """Take one request to a PR with an architect and SWE agents (seed 004).

The architect clarifies the request with you, plans it into subtasks in parallel
groups, and reviews each subtask's diff; SWE agents implement each subtask in its own
worktree, test it, and apply feedback.  Each group's branches are merged into the
run's branch, the next group starts from there, and the last merge becomes a PR.
Every step is a commit on the tasks ref, so `orange run resume ID` goes on after a
crash.  Example:

    orange run "add a --verbose flag to the CLI" --answers answers.txt --agents 2

Subcommands: list, show ID, resume ID, cancel ID.  `orange run -- list` runs a
request that is literally "list"."""


AGENTS_HELP = "SWE agents at once (default 2, at most the pool)."
BUDGET_HELP = "Dollars the whole run may cost; past them no agent starts (resume raises it)."


class RequestGroup(TyperGroup):
    """A group whose first argument, when no subcommand, is the request of ``start``."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        if args and args[0] in ("--help", "-h"):
            return super().parse_args(ctx, args)
        if args and (args[0] == "--" or args[0] not in self.commands):
            args = ["start", *args]
        return super().parse_args(ctx, args)

    def format_options(self, ctx: Context, formatter: HelpFormatter) -> None:
        """The group's options, then a run's own: `orange run REQUEST` is `start`, so its
        options belong on this page, not only under `orange run start --help`."""
        super().format_options(ctx, formatter)
        start = self.commands["start"]
        rows = [
            row
            for param in start.get_params(ctx)
            if param.param_type_name == "option" and param.name != "help"
            if (row := param.get_help_record(ctx)) is not None
        ]
        with formatter.section("Options of a run (orange run REQUEST [OPTIONS])"):
            formatter.write_dl(rows)


def _project(name: str | None) -> Project:
    found = current_project(name)
    if found is None:
        raise NotFound("not inside a registered project", hint="pass --project NAME")
    return found


def _asker(answers: Path | None, used: int, run_id: str) -> Asker:
    if answers is not None:
        return FileAsker(answers, _first_unused(run_id, answers, used), run=run_id)
    if not sys.stdin.isatty():
        return FileAsker(Path("/dev/stdin"), 0, run=run_id, stdin=True)
    return TerminalAsker(run=run_id)


def _first_unused(run_id: str, answers: Path, used: int) -> int:
    """The first line of ``answers`` this run has not used: ``used`` when it is the
    file the run last read here, else 0 (a new file starts from its first line).  Which
    file that was is this host's record (a path never goes into the committed RUN.md)."""
    record = orange_home() / "run-answers" / run_id
    here = str(answers.resolve())
    try:
        last = record.read_text(encoding="utf-8")
    except OSError:
        last = ""
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(here, encoding="utf-8")
    return used if last == here else 0


def _check_answers(answers: Path | None) -> None:
    """Refuse an answers file that cannot be read before anything is created."""
    if answers is not None:
        FileAsker(answers).lines()


def start(
    request: Annotated[str, typer.Argument(help="What to build; - reads it from stdin.")],
    project: Annotated[str | None, typer.Option("--project", help="Project name.")] = None,
    agents: Annotated[int | None, typer.Option("--agents", help=AGENTS_HELP)] = None,
    architect: Annotated[
        str | None, typer.Option("--architect", help="The architect's harness.")
    ] = None,
    swe: Annotated[str | None, typer.Option("--swe", help="The SWE agents' harness.")] = None,
    skip_clarification: Annotated[
        bool, typer.Option("--skip-clarification", help="Plan the request as it is.")
    ] = False,
    max_clarification_rounds: Annotated[
        int | None, typer.Option("--max-clarification-rounds", help="Default 10.")
    ] = None,
    answers: Annotated[
        Path | None,
        typer.Option("--answers", help="Clarification answers, one a line (for scripts)."),
    ] = None,
    failure_policy: Annotated[
        str | None,
        typer.Option("--failure-policy", help="retry (default), continue or stop."),
    ] = None,
    max_iterations: Annotated[
        int | None, typer.Option("--max-iterations", help="Review iterations a subtask (3).")
    ] = None,
    base: Annotated[
        str | None, typer.Option("--base", help="Branch to start from and merge into.")
    ] = None,
    no_pr: Annotated[bool, typer.Option("--no-pr", help="Stop after the merge.")] = False,
    budget: Annotated[str | None, typer.Option("--budget", help=BUDGET_HELP)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Start a run of REQUEST."""
    text = sys.stdin.read() if request == "-" else request
    found = _project(project)
    _check_answers(answers)
    given = (agents, architect, swe, skip_clarification, max_clarification_rounds)
    options = control.Options(*given, failure_policy, max_iterations, no_pr, base, budget)
    run = control.start(build_engine(found, actor="cli"), text, options)
    if not json_out:
        typer.echo(f"run {run.id} on branch {run.fields['branch']}", err=True)
    _drive(found, run, answers, json_out)


def _drive(found: Project, run: RunFile, answers: Path | None, json_out: bool) -> None:
    asker = _asker(answers, int(run.fields.get("answers_used") or 0), run.id)
    progress = progress_for(sys.stdout, json_mode=json_out)
    try:
        final = control.drive(found, run.id, asker=asker, progress=progress)
    except KeyboardInterrupt:  # `orange run cancel` stops a runner with SIGINT
        final = state.get(build_engine(found, actor="cli").store, run.id)
        if final.fields.get("status") != "cancelled":
            raise
    finally:
        progress.close()
    _report(found, final, json_out)


def _report(found: Project, run: RunFile, json_out: bool) -> None:
    store = build_engine(found, actor="cli").store
    if json_out:
        emit_json({"run": run_object(store, run)})
    elif run.fields.get("status") == "completed":
        typer.echo(run.fields.get("pr_url") or f"run {run.id} completed on {run.fields['branch']}")
    if run.fields.get("status") == "cancelled":
        if json_out:
            raise typer.Exit(1)
        raise InvalidInput(f"run {run.id} was cancelled", hint="its branches are kept")
    if run.fields.get("status") != "failed":
        return
    if json_out:
        raise typer.Exit(1)
    logs = state.log_dir(run.id)
    error = str(run.fields.get("error"))
    then = f"fix what it says, then `orange run resume {run.id}`"
    if error.startswith("budget of "):
        then = f"to go on, raise it: `orange run resume {run.id} --budget DOLLARS`"
    raise InvalidInput(
        f"run {run.id} failed at {run.fields.get('resume_step')}: {error}",
        hint=(f"its agents' logs are in {logs}; " if logs.is_dir() else "") + then,
    )


def resume(
    run_id: Annotated[str, typer.Argument(help="The run's id (or a unique prefix).")],
    project: Annotated[str | None, typer.Option("--project", help="Project name.")] = None,
    answers: Annotated[
        Path | None, typer.Option("--answers", help="Clarification answers, one a line.")
    ] = None,
    budget: Annotated[
        str | None, typer.Option("--budget", help="A new budget for the whole run (dollars).")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Go on with a run from its last finished step."""
    found = _project(project)
    _check_answers(answers)
    engine = build_engine(found, actor="cli")
    run = state.get(engine.store, run_id)
    if budget is not None:
        if run.fields.get("status") in state.ENDED:
            raise InvalidInput(f"run {run.id} is {run.fields.get('status')}; nothing to resume")
        run = control.set_budget(engine, run.id, budget)
    _drive(found, run, answers, json_out)


def cancel(
    run_id: Annotated[str, typer.Argument(help="The run's id (or a unique prefix).")],
    project: Annotated[str | None, typer.Option("--project", help="Project name.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Stop a run's runner and agents and cancel its open subtasks (branches kept)."""
    engine = build_engine(_project(project), actor="cli")
    run, said = control.cancel(engine, run_id)
    if json_out:
        emit_json({"run": run_object(engine.store, run), "said": said})
        return
    for line in said:
        typer.echo(line)
    typer.echo(f"run {run.id} cancelled; its branches are kept")


def list_runs(
    project: Annotated[str | None, typer.Option("--project", help="Project name.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """The project's runs, newest first."""
    store = build_engine(_project(project), actor="cli").store
    runs = state.all_runs(store)
    if json_out:
        emit_json({"runs": [_listed(store, r) for r in runs]})
        return
    if not runs:
        typer.echo("no runs")
    for entry in runs:
        if not isinstance(entry, RunFile):
            typer.echo(f"{entry[0]}  broken: {visible(entry[1])}")
            continue
        f = entry.fields
        request = " ".join(entry.text("Request").split())[:60]
        cost = cost_text(_spent(store, entry), f.get(BUDGET))
        typer.echo(
            f"{entry.id}  {state.shown_status(store, entry):<11}  {f.get('step')!s:<20}  "
            f"{cost:>9}  {visible(request)}"
        )


def _listed(store: Any, entry: RunFile | tuple[str, str]) -> dict[str, Any]:
    if isinstance(entry, RunFile):
        return run_object(store, entry)
    return {"id": entry[0], "broken": True, "error": entry[1]}


def show(
    run_id: Annotated[str, typer.Argument(help="The run's id (or a unique prefix).")],
    project: Annotated[str | None, typer.Option("--project", help="Project name.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """A run: its step, clarification log, plan, subtasks, branches and PR."""
    store = build_engine(_project(project), actor="cli").store
    run = state.get(store, run_id)
    obj = run_object(store, run, full=True)
    if json_out:
        emit_json({"run": obj})
        return
    typer.echo(visible(describe(obj)))


def _subtask_tasks(store: Any, run: RunFile) -> dict[str, Task]:
    """The tasks the record names for its subtasks, by subtask id, that can be read
    (shown, never acted on: the record is shared data)."""
    found: dict[str, Task] = {}
    for entry in run.subtasks():
        task_id = entry.get("task")
        if isinstance(task_id, str) and valid_task_id(task_id):
            try:
                found[str(entry.get("id"))] = store.get(task_id)
            except OrangeError:
                continue
    return found


def _spent(store: Any, run: RunFile) -> Spent:
    return spent_by(run, _subtask_tasks(store, run).values())


def cost_text(spent: Spent, budget: Any = None) -> str:
    """``$1.23``, ``$1.23+?`` (a part unknown), ``unknown``; ``/5.00`` with a budget."""
    text = f"${spent.cost:.2f}"
    if spent.unknown:
        text = "unknown" if not spent.cost else f"{text}+?"
    return f"{text}/{budget}" if isinstance(budget, str) and budget else text


def run_object(store: Any, run: RunFile, *, full: bool = False) -> dict[str, Any]:
    f = run.fields
    planned = _safe_json(run, "Plan")
    titles = _titles(planned)
    tasks = _subtask_tasks(store, run)
    spent = spent_by(run, tasks.values())
    subtasks = [
        {
            "id": e.get("id"),
            "title": titles.get(str(e.get("id")), ""),
            "status": e.get("status"),
            "task": e.get("task"),
            "branch": e.get("branch"),
            "group": e.get("group"),
            "iterations": e.get("iterations", 0),
            "retries": e.get("retries", 0),
            "note": e.get("note", ""),
            **_ledger(tasks[str(e.get("id"))].fields if str(e.get("id")) in tasks else {}),
        }
        for e in run.subtasks()
    ]
    obj: dict[str, Any] = {
        "id": run.id,
        "project": f.get("project"),
        "host": f.get("host"),
        "step": f.get("step"),
        "status": state.shown_status(store, run),
        "branch": f.get("branch"),
        "base": f.get("base"),
        "pr_url": f.get("pr_url"),
        "error": f.get("error"),
        "policy": f.get("policy"),
        "agents": f.get("agents"),
        "subtasks": subtasks,
        "request": run.text("Request"),
        "budget_usd": f.get(BUDGET),
        "cost_usd": money(spent.cost),
        "cost_unknown": spent.unknown,
        "tokens": spent.tokens,
        "architect_usage": _ledger(f),
        "created_at": f.get("created_at"),
        "updated_at": f.get("updated_at"),
    }
    if full:
        # This host's logs of the run's agents (the committed RUN.md names no path).
        logs = state.log_dir(run.id)
        obj["logs"] = str(logs) if logs.is_dir() else None
        obj["requirement"] = run.text("Requirement")
        obj["clarification"] = _safe_json(run, "Clarification") or []
        obj["plan"] = planned
        obj["logs"] = str(state.log_dir(run.id))
    return obj


def _ledger(fields: Mapping[str, Any]) -> dict[str, Any]:
    """One agent's (or one subtask's agents') recorded usage, as `run show` gives it."""
    return {
        "cost_usd": money(cost_of(fields)),
        "cost_unknown": fields.get(UNKNOWN_COST) is True,
        "tokens": tokens_of(fields),
    }


def _titles(plan: Any) -> dict[str, str]:
    """Each planned subtask's title by id (the record is shared data: anything of
    another shape is left out)."""
    subtasks = plan.get("subtasks") if isinstance(plan, dict) else None
    if not isinstance(subtasks, list):
        return {}
    return {
        s["id"]: str(s.get("title", ""))
        for s in subtasks
        if isinstance(s, dict) and isinstance(s.get("id"), str)
    }


def _safe_json(run: RunFile, title: str) -> Any:
    try:
        return run.json_section(title)
    except BrokenTaskFile:  # shown as missing rather than failing the whole command
        return None


def describe(obj: dict[str, Any]) -> str:
    lines = [
        f"run {obj['id']}: {obj['status']} at {obj['step']}",
        f"branch {obj['branch']} (from {obj['base']}); policy {obj['policy']}; "
        f"{obj['agents']} agents",
    ]
    spent = Spent(Decimal(obj["cost_usd"]), obj["tokens"], obj["cost_unknown"])
    tokens = obj["tokens"]
    lines.append(
        f"cost {cost_text(spent, obj.get('budget_usd'))} (tokens {tokens['in']:,} in, "
        f"{tokens['out']:,} out, {tokens['cache']:,} cache); the architect "
        f"{_one_cost(obj['architect_usage'])}"
    )
    if obj.get("pr_url"):
        lines.append(f"PR {obj['pr_url']}")
    if obj.get("error"):
        lines.append(f"error: {obj['error']}")
    if obj.get("logs"):
        lines.append(f"logs: {obj['logs']}")
    lines += ["", "request:", *[f"  {line}" for line in obj["request"].splitlines()]]
    for turn in obj.get("clarification") or []:
        lines.append(f"  {turn.get('role')}: {' '.join(str(turn.get('text')).split())}")
    if obj["subtasks"]:
        lines += ["", "subtasks:"]
    for s in obj["subtasks"]:
        note = f" - {s['note']}" if s.get("note") else ""
        lines.append(
            f"  {s['id']} (group {s['group']}) {s['status']}, iteration {s['iterations']}, "
            f"{_one_cost(s)}, task {s['task']}, {s['branch']}: {s['title']}{note}"
        )
    lines += ["", f"agent logs: {obj.get('logs')}"]
    return "\n".join(lines)


def _one_cost(ledger: dict[str, Any]) -> str:
    return cost_text(Spent(Decimal(ledger["cost_usd"]), ledger["tokens"], ledger["cost_unknown"]))


COMMANDS = (
    ("start", start),
    ("list", list_runs),
    ("show", show),
    ("resume", resume),
    ("cancel", cancel),
)


def group() -> typer.Typer:
    app = typer.Typer(help=HELP, cls=RequestGroup, no_args_is_help=True)
    for name, command in COMMANDS:
        app.command(name)(command)
    return app
