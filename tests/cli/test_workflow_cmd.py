"""``orange workflow list | show | validate``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orange.engine.catalog import load_named
from tests.conftest import Cli

SHIPPED = ["default", "fresh-worker", "minimal", "run-subtask", "self-review"]


@pytest.fixture(autouse=True)
def no_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture
def user_dir(hermetic: Path) -> Path:
    folder = hermetic / "orange" / "workflows"
    folder.mkdir(parents=True)
    return folder


def shipped_text(name: str) -> str:
    return load_named(name).source_text


# list ------------------------------------------------------------------------------------


def test_list_shows_the_shipped_workflows(cli: Cli) -> None:
    rows = [line.split("\t") for line in cli.ok("workflow", "list").out.splitlines()]
    assert [row[0] for row in rows] == SHIPPED
    assert all(row[1] == "shipped" and row[2].endswith(f"{row[0]}.yml") for row in rows)


def test_user_workflows_are_listed_and_override_shipped_ones(cli: Cli, user_dir: Path) -> None:
    (user_dir / "default.yml").write_text(
        shipped_text("default").replace("version: 1", "version: 7")
    )
    (user_dir / "house.yml").write_text(
        shipped_text("minimal").replace("name: minimal", "name: house")
    )
    data = cli.ok("workflow", "list", "--json").json()
    assert isinstance(data, dict)
    entries = {e["name"]: e for e in data["workflows"]}
    assert sorted(entries) == sorted([*SHIPPED, "house"])  # one default, not two
    assert entries["default"]["is_user"] is True
    assert entries["default"]["path"] == str(user_dir / "default.yml")
    assert entries["house"]["is_user"] is True
    assert entries["minimal"]["is_user"] is False
    text = cli.ok("workflow", "list").out
    assert f"default\tuser\t{user_dir / 'default.yml'}" in text
    # The override is what `show` (and task creation) loads.
    assert "default v7" in cli.ok("workflow", "show", "default").out


# show ------------------------------------------------------------------------------------


def test_show_table_lists_states_gates_and_hooks(cli: Cli) -> None:
    out = cli.ok("workflow", "show", "default").out
    workflow = load_named("default")
    for state in workflow.states:
        assert state in out
    for heading in ("## Plan", "## Handoff", "## Review"):
        assert heading in out
    states_table = out.split("\ntransitions")[0].splitlines()
    rows = {line.split()[1]: line for line in states_table if line.startswith("│ ")}
    assert "queue" in rows["pending"]
    assert "done" in rows["done"].split("│")[3]
    assert "cancelled" in rows["cancelled"].split("│")[3]
    assert "waits; request-changes -> working" in rows["reviewing"]
    # stuck -> working is a human's send-back too (added to seed 000, issue 10)
    assert rows["stuck"].rstrip(" │").endswith("waits; request-changes -> working")
    assert "waits" not in rows["working"]
    assert "Verdict: FAIL" in out and "review_round < 2" in out
    # Every hook of every transition is shown whole, never cut to "spawn_revie…".
    for transition in workflow.transitions:
        for hook in transition.hooks:
            assert hook.action in out
    assert "spawn_reviewer(prompt=reviewer)" in out
    assert "…" not in out
    assert "crash (stuck after 2)" in out  # exit monitoring


def test_show_names_inferred_roles(cli: Cli, user_dir: Path) -> None:
    text = re.sub(r"(?m)^ +(role|waits_for_human): .*\n", "", shipped_text("self-review"))
    path = user_dir / "self-review.yml"
    path.write_text(text)
    out = cli.ok("workflow", "show", "self-review").out
    assert f"inferred: {path}: states.pending: role not declared, inferred 'queue'" in out
    assert "inferred" not in cli.ok("workflow", "show", "minimal").out


def test_show_wraps_instead_of_cutting_on_a_narrow_terminal(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    out = cli.ok("workflow", "show", "default").out
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 60


def test_show_prints_workflow_text_literally(cli: Cli, user_dir: Path) -> None:
    """A workflow file is input: square brackets are text, not rich markup."""
    text = shipped_text("minimal").replace("name: minimal", "name: odd")
    text = text.replace(
        "description: Worker implements, human reviews. No agent review, no clarification.",
        'description: "closes [/x] early, [bold]not bold[/bold]"',
    )
    (user_dir / "odd.yml").write_text(text)
    result = cli("workflow", "show", "odd")
    assert result.code == 0, result.err
    assert "closes [/x] early, [bold]not bold[/bold]" in result.out


def test_show_mermaid(cli: Cli) -> None:
    out = cli.ok("workflow", "show", "default", "--format", "mermaid").out
    assert out.startswith("stateDiagram-v2\n")
    assert 'state "agent-review" as agent_review' in out
    assert "working --> agent_review: Handoff" in out


def test_show_unknown_name_or_format(cli: Cli) -> None:
    missing = cli("workflow", "show", "nope")
    assert missing.code == 1 and missing.err.count("\n") == 1
    assert (
        'unknown workflow "nope" (known: default, fresh-worker, minimal, run-subtask, self-review)'
        in (missing.err)
    )
    bad = cli("workflow", "show", "default", "--format", "svg")
    assert bad.code == 1 and "unknown format 'svg'" in bad.err


def test_show_json_is_the_workflow_as_data(cli: Cli) -> None:
    data = cli.ok("workflow", "show", "default", "--json").json()
    workflow = load_named("default")
    assert data["name"] == "default" and data["version"] == workflow.version
    assert [s["name"] for s in data["states"]] == list(workflow.states)
    reviewing = next(s for s in data["states"] if s["name"] == "reviewing")
    assert reviewing["waits_for_human"] is True
    assert reviewing["request_changes_to"] == workflow.request_changes_target("reviewing")
    handoff = next(
        t for t in data["transitions"] if (t["from"], t["to"]) == ("working", "agent-review")
    )
    assert handoff["gate"]["section"] == "## Handoff"
    assert handoff["by"] == list(workflow.transitions_between("working", "agent-review")[0].by)
    assert "spawn_reviewer" in [hook["action"] for hook in handoff["hooks"]]
    assert data["escalation"]["to"] == "stuck"
    assert data["exit_monitoring"]["rules"]
    mermaid = cli.ok("workflow", "show", "default", "--format", "mermaid", "--json").json()
    assert mermaid["mermaid"].startswith("stateDiagram-v2\n")


def test_show_json_errors_are_objects(cli: Cli) -> None:
    missing = cli("workflow", "show", "nope", "--json")
    assert missing.code == 1
    assert missing.json()["error"].startswith('unknown workflow "nope"')


def test_show_broken_user_workflow_names_file_and_key(cli: Cli, user_dir: Path) -> None:
    path = user_dir / "default.yml"
    path.write_text(shipped_text("default").replace("to: reviewing\n", "to: reveiwing\n", 1))
    result = cli("workflow", "show", "default")
    assert result.code == 1 and result.err.count("\n") == 1
    assert str(path) in result.err
    assert 'transitions[11].to: unknown state "reveiwing"' in result.err


# validate --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_validate_accepts_the_shipped_workflows(cli: Cli, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.yml"
    path.write_text(shipped_text(name))
    result = cli.ok("workflow", "validate", str(path))
    out = result.out
    assert f"valid workflow '{name}'" in out
    assert result.err == ""  # every role is declared: nothing inferred, no warning
    workflow = load_named(name)
    assert f"({len(workflow.states)} states, {len(workflow.transitions)} transitions)" in out


BROKEN = [
    pytest.param(
        ("to: reviewing\n", "to: nowhere\n"), 'transitions[11].to: unknown state "nowhere"',
        id="unknown-target-state",
    ),
    pytest.param(
        ("      - action: kill_reviewer\n", "      - action: kill_reveiwer\n"),
        'transitions[11].hooks[0].action: unknown action "kill_reveiwer"',
        id="unknown-hook-action",
    ),
    pytest.param(
        ('    when: "review_round < 2"\n', '    when: "review_round <"\n'),
        "transitions[12].when:",
        id="when-does-not-parse",
    ),
    pytest.param(
        ("        message: review_failed\n", "        message: no_such_prompt\n"),
        'transitions[12].hooks[1].message: unknown prompt "no_such_prompt"',
        id="unknown-prompt",
    ),
    pytest.param(
        ("    respawn_prompt: stuck_fix\n", "    respawn_prompt: unstick\n"),
        'states.stuck.respawn_prompt: unknown prompt "unstick"',
        id="unknown-respawn-prompt",
    ),
    pytest.param(
        ('        - when: "review_round >= 2"\n', '        - when: "review_round >= 1"\n'),
        "exit_monitoring.rules[5].then_when[1].when: overlaps then_when[0]",
        id="overlapping-then-when",
    ),
    pytest.param(
        ('        - when: "review_round < 2"\n', '        - when: "review_round < 1"\n'),
        "exit_monitoring.rules[5].then_when: not exhaustive",
        id="then-when-not-exhaustive",
    ),
    pytest.param(
        ("  - from: stuck\n    to: reviewing\n", "  - from: done\n    to: reviewing\n"),
        'transitions[18].from: "done" is terminal',
        id="transition-leaves-terminal-state",
    ),
    pytest.param(
        ("    role: done ", "    role: finished "),
        "states.done.role: expected one of queue, done, cancelled, got 'finished'",
        id="unknown-role",
    ),
    pytest.param(
        ("    role: cancelled ", "    role: done "),
        "states.cancelled.role: role done is already declared by states.done",
        id="duplicate-role",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "says"), BROKEN)
def test_validate_names_file_and_key_path(
    cli: Cli, tmp_path: Path, edit: tuple[str, str], says: str
) -> None:
    old, new = edit
    text = shipped_text("default")
    assert old in text
    path = tmp_path / "mine.yml"
    path.write_text(text.replace(old, new, 1))
    result = cli("workflow", "validate", str(path))
    assert result.code == 1, result.out
    assert result.err.count("\n") == 1
    assert result.err.startswith(f"orange: {path}: ")
    assert says in result.err
    assert result.out == ""


def test_validate_warns_about_each_inferred_role(cli: Cli, tmp_path: Path) -> None:
    text = re.sub(r"(?m)^ +(role|waits_for_human): .*\n", "", shipped_text("minimal"))
    path = tmp_path / "old.yml"
    path.write_text(text)
    result = cli.ok("workflow", "validate", str(path))  # still valid: exit 0
    assert "valid workflow 'minimal'" in result.out
    assert result.err.splitlines() == [
        f"warning: {path}: states.pending: role not declared, inferred 'queue'",
        f"warning: {path}: states.cancelled: role not declared, inferred 'cancelled'",
        f"warning: {path}: states.done: role not declared, inferred 'done'",
        f"warning: {path}: states.reviewing: waits_for_human not declared, inferred true",
        f"warning: {path}: states.stuck: waits_for_human not declared, inferred true",
    ]


def test_validate_json_carries_the_warnings(cli: Cli, tmp_path: Path) -> None:
    text = re.sub(r"(?m)^ +(role|waits_for_human): .*\n", "", shipped_text("minimal"))
    path = tmp_path / "old.yml"
    path.write_text(text)
    result = cli.ok("workflow", "validate", str(path), "--json")
    data = result.json()
    assert data["valid"] is True and data["name"] == "minimal" and data["path"] == str(path)
    assert data["warnings"][0] == f"{path}: states.pending: role not declared, inferred 'queue'"
    assert len(data["warnings"]) == 5
    assert result.err == ""
    broken = tmp_path / "broken.yml"
    broken.write_text(shipped_text("default").replace("to: reviewing\n", "to: reveiwing\n", 1))
    failed = cli("workflow", "validate", str(broken), "--json")
    assert failed.code == 1
    assert 'unknown state "reveiwing"' in failed.json()["error"]


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("empty.yml", "", "the file is empty"),
        ("bad.yml", "name: [unclosed\n", ""),
        ("list.yml", "- just\n- a list\n", ""),
    ],
    ids=["empty", "bad-yaml", "not-a-mapping"],
)
def test_validate_unreadable_files(
    cli: Cli, tmp_path: Path, name: str, text: str, says: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    result = cli("workflow", "validate", str(path))
    assert result.code == 1 and result.err.count("\n") == 1
    assert result.err.startswith(f"orange: {path}")
    assert says in result.err


def test_validate_missing_file(cli: Cli, tmp_path: Path) -> None:
    result = cli("workflow", "validate", str(tmp_path / "absent.yml"))
    assert result.code == 1 and "no file" in result.err


def test_validate_takes_a_workflow_name_anywhere(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user_dir: Path
) -> None:
    """The README's `orange workflow validate minimal` works outside Orange's source tree."""
    monkeypatch.chdir(tmp_path)
    out = cli.ok("workflow", "validate", "minimal").out
    assert "valid workflow 'minimal'" in out
    (user_dir / "house.yml").write_text("name: house\nstates: [\n")
    broken = cli("workflow", "validate", "house")
    assert broken.code == 1 and str(user_dir / "house.yml") in broken.err
    unknown = cli("workflow", "validate", "nope")
    assert unknown.code == 1 and "nor a workflow of that name" in unknown.err
    assert "minimal" in unknown.err


def test_show_yaml_prints_the_file_to_start_your_own(cli: Cli, tmp_path: Path) -> None:
    text = cli.ok("workflow", "show", "minimal", "--format", "yaml").out
    assert text == shipped_text("minimal")
    mine = tmp_path / "my.yml"
    mine.write_text(text.replace("name: minimal", "name: mine"))
    assert "valid workflow 'mine'" in cli.ok("workflow", "validate", str(mine)).out
    data = cli.ok("workflow", "show", "minimal", "--format", "yaml", "--json").json()
    assert data == {"name": "minimal", "yaml": shipped_text("minimal")}
