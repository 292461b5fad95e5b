from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from orange.home import orange_home
from orange.store import layout
from orange.store.events import Change
from orange.store.listing import all_tasks
from orange.store.store import TaskStore
from tests.conftest import Cli, damage, git, run_orange


@pytest.fixture
def project(cli: Cli, repo: Path) -> Path:
    cli.ok("project", "add", cwd=repo)
    return repo


def create(cli: Cli, *args: str) -> dict[str, object]:
    result = cli.ok("task", "create", *args, "--no-spawn", "--json")
    data = result.json()
    assert isinstance(data, dict)
    return data


def test_create_defaults(cli: Cli, project: Path) -> None:
    task = create(cli, "", "Add dark mode")
    assert task["status"] == "pending"
    assert task["branch"] == f"orange-tasks/{task['id']}"
    assert task["project"] == "proj"
    assert task["workflow"] == "default"
    assert task["review_round"] == 0 and task["crash_count"] == 0
    assert task["host"] == "testhost"
    assert len(str(task["id"])) == 8


def test_empty_summary_means_clarification(cli: Cli, project: Path) -> None:
    assert create(cli)["status"] == "clarification"


def test_context_from_stdin_becomes_a_section(cli: Cli, project: Path) -> None:
    result = cli.ok(
        "task",
        "create",
        "ctx",
        "with context",
        "--context",
        "-",
        "--no-spawn",
        "--json",
        stdin="line one\n$(not run) `nor this`\n",
    )
    task_id = result.json()["id"]
    shown = cli.ok("task", "show", task_id, "--json").json()
    assert "## Context\n\nline one\n$(not run) `nor this`\n" in shown["body"]


@pytest.mark.parametrize(
    "branch", ["bad..name", "-leading", "has space", "semi;colon:x", "trailing/", "a~b", "x.lock"]
)
def test_invalid_branch_names_are_rejected(cli: Cli, project: Path, branch: str) -> None:
    before = git(project, "for-each-ref", "refs/orange")
    result = cli("task", "create", branch, "s", "--no-spawn")
    assert result.code in (1, 2)
    assert "branch" in result.err or "Usage" in result.err or "No such option" in result.err
    assert git(project, "for-each-ref", "refs/orange") == before


def test_branch_must_be_unique_in_project(cli: Cli, project: Path) -> None:
    create(cli, "feature-x", "one")
    result = cli("task", "create", "feature-x", "two", "--no-spawn")
    assert result.code == 1
    assert "already used by task" in result.err


def test_a_task_never_works_on_the_branch_it_merges_into(cli: Cli, project: Path) -> None:
    git(project, "branch", "release")
    before = git(project, "for-each-ref", "refs/orange")
    for args in (["main", "s"], ["release", "s", "--base", "release"]):
        result = cli("task", "create", *args, "--no-spawn")
        assert result.code == 1
        assert result.err.startswith(f"orange: branch {args[0]!r} is the branch this task merges")
        assert "give the task a branch of its own" in result.err
        assert len(result.err.splitlines()) == 1
    assert git(project, "for-each-ref", "refs/orange") == before
    parked = create(cli, "feature-y", "one")
    result = cli("task", "update", str(parked["id"]), "--branch", "main")
    assert result.code == 1
    assert "is the branch this task merges into" in result.err
    assert cli.ok("task", "show", str(parked["id"]), "--json").json()["branch"] == "feature-y"
    assert create(cli, "main-fix", "two", "--base", "release")["branch"] == "main-fix"
    after_creates = git(project, "for-each-ref", "refs/orange/tasks")
    # Another base does not make the default branch a task's own.
    other_base = cli("task", "create", "main", "s", "--no-spawn", "--base", "release")
    assert other_base.code == 1 and other_base.err == (
        "orange: branch 'main' is the repository's default branch, which no task works on "
        "(give the task a branch of its own)\n"
    )
    assert git(project, "for-each-ref", "refs/orange/tasks") == after_creates


def test_a_broken_harness_env_refuses_the_start_before_the_move(cli: Cli, project: Path) -> None:
    agent = [sys.executable, "-m", "orange.demo_agent", "{prompt}"]
    config = {"harnesses": {"fake": {"command": agent, "usage": "none"}}, "harness_env": 5}
    (orange_home() / "config.yml").write_text(yaml.safe_dump(config))
    result = cli("task", "create", "feature-z", "s", "--harness", "fake", "--json")
    assert "harness_env: must map a harness name to variables" in result.err
    listed = cli.ok("task", "list", "--json").json()["tasks"]
    assert [(t["branch"], t["status"], t["workspace"]) for t in listed] == [
        ("feature-z", "pending", None)
    ]


def test_an_effort_no_harness_takes_is_refused_before_the_harness_is_known(
    cli: Cli, project: Path
) -> None:
    """Parked without --harness, the task's agent is chosen when it starts: an effort
    level no harness has would refuse that start, and no command changes it after."""
    tip = git(project, "for-each-ref", layout.TASKS_REF)
    for flag in ("--effort", "--review-effort"):
        refused = cli("task", "create", "e", "s", "--no-spawn", flag, "hgih")
        assert refused.code == 1 and refused.err.startswith(
            'orange: no harness has effort level "hgih" (levels: high, low, max, medium,'
        ), refused.err
        assert len(refused.err.splitlines()) == 1
    assert git(project, "for-each-ref", layout.TASKS_REF) == tip
    assert create(cli, "e", "s", "--effort", "high", "--review-effort", "low")["branch"] == "e"


def test_list_filters_and_sorts_by_activity(cli: Cli, project: Path) -> None:
    a = create(cli, "a", "first")
    b = create(cli, "b", "second")
    c = create(cli, "c", "third")
    cli.ok("task", "update", str(a["id"]), "--summary", "first, touched last")
    cli.ok("task", "cancel", str(b["id"]), "--yes")
    ids = [t["id"] for t in cli.ok("task", "list", "--json").json()["tasks"]]
    assert ids == [a["id"], c["id"]]
    all_ids = [t["id"] for t in cli.ok("task", "list", "--all", "--json").json()["tasks"]]
    assert set(all_ids) == {a["id"], b["id"], c["id"]}
    only = cli.ok("task", "list", "--status", "cancelled", "--json").json()["tasks"]
    assert [t["id"] for t in only] == [b["id"]]
    assert "body" not in only[0]
    with_body = cli.ok("task", "list", "--json", "--body").json()["tasks"]
    assert all("body" in t for t in with_body)


def test_list_all_projects(cli: Cli, project: Path, tmp_path: Path) -> None:
    from tests.conftest import make_repo

    other = make_repo(tmp_path / "other")
    cli.ok("project", "add", cwd=other)
    cli.ok("task", "create", "here", "in proj", "--no-spawn", cwd=project)
    cli.ok("task", "create", "there", "in other", "--no-spawn", cwd=other)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    listed = cli.ok("task", "list", "--json", cwd=outside).json()["tasks"]
    assert {t["project"] for t in listed} == {"proj", "other"}
    mine = cli.ok("task", "list", "--json", cwd=project).json()["tasks"]
    assert {t["project"] for t in mine} == {"proj"}
    both = cli.ok("task", "list", "--all-projects", "--json", cwd=project).json()["tasks"]
    assert len(both) == 2


def test_after_naming_a_task_of_another_project_says_so(
    cli: Cli, project: Path, tmp_path: Path
) -> None:
    from tests.conftest import make_repo

    other = make_repo(tmp_path / "other")
    cli.ok("project", "add", cwd=other)
    there = str(create(cli, "there", "in other")["id"])
    here = str(cli.ok("task", "create", "here", "in proj", "--no-spawn", "--json", cwd=project)
               .json()["id"])  # fmt: skip
    tip = git(project, "rev-parse", layout.TASKS_REF)
    says = (
        f"--after: task {there} is in project other, not proj: a task waits only for "
        f"tasks of its own project (create this task in other with --project other, or "
        f"leave {there} out and start this one by hand once it is merged)\n"
    )
    for args in (("task", "create", "x", "X", "--no-spawn", "--after", there[:5]),
                 ("task", "update", here, "--after", there)):  # fmt: skip
        refused = cli(*args, cwd=project)
        assert (refused.code, refused.err) == (1, f"orange: {says}")
    assert git(project, "rev-parse", layout.TASKS_REF) == tip


def test_show_has_history_with_events(cli: Cli, project: Path) -> None:
    task = create(cli, "hist", "history please")
    cli.ok("task", "update", str(task["id"])[:5], "--summary", "changed")
    shown = cli.ok("task", "show", str(task["id"]), "--json").json()
    events = [(h["event"], h["actor"]) for h in shown["history"]]
    assert events == [("task.created", "cli"), ("task.updated", "cli")]
    assert all(len(h["commit"]) == 40 and h["at"].endswith("Z") for h in shown["history"])
    log = cli.ok("task", "log", str(task["id"])).out
    assert "updated summary" in log


def test_update_summary_and_branch(cli: Cli, project: Path) -> None:
    task = create(cli, "old-branch", "s")
    out = cli.ok("task", "update", str(task["id"]), "--branch", "new-branch", "--json").json()
    assert out["branch"] == "new-branch"
    bad = cli("task", "update", str(task["id"]), "--branch", "no..dots")
    assert bad.code == 1
    no_wt = cli("task", "update", str(task["id"]), "--branch")
    assert no_wt.code == 1 and "no worktree" in no_wt.err


def test_edit_section_and_whole_body(cli: Cli, project: Path) -> None:
    task_id = str(create(cli, "e", "edit me")["id"])
    cli.ok("task", "edit", task_id, "--section", "Notes", "--file", "-", stdin="note 1\n")
    cli.ok("task", "edit", task_id, "--section", "## Plan", "--file", "-", stdin="APPROACH: x\n")
    body = cli.ok("task", "show", task_id, "--json").json()["body"]
    assert "## Notes\n\nnote 1\n" in body and "## Plan\n\nAPPROACH: x\n" in body
    cli.ok("task", "edit", task_id, "--file", "-", stdin="whole\nbody\n")
    assert cli.ok("task", "show", task_id, "--json").json()["body"] == "whole\nbody\n"


def test_edit_with_editor(
    cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task_id = str(create(cli, "ed", "editor")["id"])
    script = tmp_path / "fake-editor"
    script.write_text("#!/bin/sh\nprintf 'from the editor\\n' >> \"$1\"\n")
    script.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(script))
    cli.ok("task", "edit", task_id, "--section", "Notes")
    assert "from the editor" in cli.ok("task", "show", task_id, "--json").json()["body"]


def test_delete_only_ended_tasks(cli: Cli, project: Path) -> None:
    task_id = str(create(cli, "d", "delete me")["id"])
    refused = cli("task", "delete", task_id, "--yes")
    assert refused.code == 1 and "only a cancelled or done task can be deleted" in refused.err
    no_yes = cli("task", "delete", task_id)
    assert no_yes.code == 1
    cli.ok("task", "cancel", task_id, "--yes")
    assert cli("task", "delete", task_id).code == 1  # no terminal to ask on: needs --yes
    cli.ok("task", "delete", task_id, "--yes")
    assert cli("task", "show", task_id).code == 1
    assert "deleted" in git(project, "log", "-1", "--format=%s", layout.TASKS_REF)


def test_json_errors_and_exit_codes(cli: Cli, project: Path) -> None:
    missing = cli("task", "show", "nosuchid", "--json")
    assert missing.code == 1
    assert "error" in missing.json()
    outside = cli("task", "show")  # outside a task's worktree: no task to infer
    assert (outside.code, outside.err) == (
        1,
        "orange: no task id given; pass the task id (see `orange task list`)\n",
    )


def test_broken_task_is_listed_and_show_names_file_and_error(cli: Cli, project: Path) -> None:
    good = create(cli, "g", "good")
    store = TaskStore.open(project)
    path = layout.task_path("broken1")
    store.commit(lambda snap: Change("broken1", "test", "break", {path: b"---\nid: [x\n---\n"}))
    listed = cli.ok("task", "list", "--json").json()["tasks"]
    assert any(t.get("broken") and t["path"] == path for t in listed)
    assert any(t.get("id") == good["id"] for t in listed)
    human = cli.ok("task", "list")
    assert "broken" in human.out
    shown = cli("task", "show", "broken1")
    assert shown.code == 1
    assert path in shown.err and "not valid YAML" in shown.err
    assert "Traceback" not in shown.err


def test_a_task_git_cannot_read_is_a_one_line_error_and_broken_in_listings(
    cli: Cli, project: Path
) -> None:
    """A task whose file is damaged in this clone's objects after a listing cached it:
    `task show` and `task update` give a one-line error, the listing with bodies shows it
    broken, and other tasks are listed as ever (no internal error)."""
    good = create(cli, "g", "good")
    hurt = create(cli, "h", "hurt")
    cli.ok("task", "list", "--json")  # cached while readable
    path = layout.task_path(str(hurt["id"]))
    damage(project, git(project, "rev-parse", f"{layout.TASKS_REF}:{path}").strip())
    for args in (
        ("task", "show", str(hurt["id"])),
        ("task", "update", str(hurt["id"]), "--summary", "x"),
    ):
        failed = cli(*args)
        assert failed.code == 1, failed.err
        assert f"{path}: TASK.md cannot be read: " in failed.err and "git fsck" in failed.err
    listed = cli.ok("task", "list", "--json", "--body").json()["tasks"]
    assert [t["id"] for t in listed if not t.get("broken")] == [good["id"]]
    broken = [t for t in listed if t.get("broken")]
    assert len(broken) == 1 and broken[0]["path"] == path


def test_a_status_filter_leaves_broken_tasks_out(cli: Cli, project: Path) -> None:
    """A broken task has no status: a filter by status never matches it, and the help
    says how to see it (`task list` without a filter, as above)."""
    good = create(cli, "g", "good")
    status = str(good["status"])
    store = TaskStore.open(project)
    path = layout.task_path("broken1")
    store.commit(lambda snap: Change("broken1", "test", "break", {path: b"---\nid: [x\n---\n"}))
    for extra in ((), ("--body",)):
        listed = cli.ok("task", "list", "--status", status, "--json", *extra).json()
        assert [t["id"] for t in listed["tasks"]] == [good["id"]]
        assert cli.ok("task", "list", "--status", "reviewing", "--json", *extra).json() == {
            "tasks": []
        }
    assert "broken" not in cli.ok("task", "list", "--status", status).out
    assert "without --status lists them" in " ".join(cli.ok("task", "list", "--help").out.split())


def test_unexpected_errors_exit_3_with_a_log(
    cli: Cli, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orange.home import orange_home
    from orange.store import listing

    def explode(snap: object) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr(listing, "tasks", explode)
    result = cli("task", "list")
    assert result.code == 3
    assert "internal error" in result.err and "Traceback" not in result.err
    logs = list((orange_home() / "logs").glob("crash-*.log"))
    assert logs and "RuntimeError: boom" in logs[0].read_text()
    assert logs[0].stat().st_mode & 0o777 == 0o600  # the argv may hold secrets
    assert (orange_home() / "logs").stat().st_mode & 0o777 == 0o700


def test_real_process_round_trip(project: Path) -> None:
    created = run_orange(
        "task", "create", "real", "real process", "--no-spawn", "--json", cwd=project
    )
    assert created.code == 0, created.err
    listed = run_orange("task", "list", "--json", cwd=project)
    assert listed.code == 0 and "real process" in listed.out
    bad = run_orange("task", "show", "zzzz", cwd=project)
    assert bad.code == 1 and bad.err.count("\n") == 1


def test_fast_json_listing_equals_the_task_objects(cli: Cli, project: Path) -> None:
    from orange.cli.output import task_object
    from orange.store.task import Task

    a = create(cli, "with-ws", 'ünïcødé "quoted" summary')
    create(cli, "plain", "plain")
    store = TaskStore.open(project)
    # give one task a workspace so workspace_path is derived
    path = layout.task_path(str(a["id"]))
    task = store.get(str(a["id"])).with_fields(workspace="proj--1")
    store.commit(lambda snap: Change(task.id, "test", "ws", {path: task.render().encode()}))
    listed = cli.ok("task", "list", "--json").json()["tasks"]
    queue = ("queue", "queue_position", "waiting_for")  # this host's marks (issue 29)
    listed = [{k: v for k, v in t.items() if k not in queue} for t in listed]
    expected = sorted(
        (task_object(t) for t in all_tasks(store) if isinstance(t, Task)),
        key=lambda o: o["updated_at"],
        reverse=True,
    )
    assert listed == expected
    with_ws = next(t for t in listed if t["id"] == a["id"])
    assert with_ws["workspace_path"].endswith("workspaces/proj--1")


def test_a_status_no_workflow_has_is_an_error_not_an_empty_list(cli: Cli, repo: Path) -> None:
    cli.ok("project", "add", cwd=repo)
    cli.ok("task", "create", "s", "something", "--no-spawn")
    for extra in ((), ("--json",)):
        typo = cli("task", "list", "--status", "pendng", *extra)
        assert typo.code == 1 and "no status 'pendng' in the workflow of proj" in typo.err
        assert "statuses: agent-review, cancelled" in typo.err
    assert cli.ok("task", "list", "--status", "done").out.strip() == "no tasks"
