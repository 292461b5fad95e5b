"""`orange doctor` and `orange install`'s first-use settings, in a fresh HOME with a
registered project (issue 25): doctor names each screen a first task would wait on and
what to run; install writes the agents' own settings only with consent (``--yes``, or a
"y" on a terminal), refuses in one line without either, and keeps the user's own."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
import yaml

from orange.home import orange_home
from orange.ops.doctor import check
from tests.conftest import Cli


@pytest.fixture
def fresh(
    hermetic: Path, repo: Path, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A registered project, and `claude` and `codex` on PATH (programs that are never
    run here: doctor and install only read and write their settings)."""
    cli.ok("project", "add", cwd=repo)
    folder = tmp_path / "agents-bin"
    folder.mkdir()
    for name in ("claude", "codex"):
        (folder / name).write_text("#!/bin/sh\nexit 0\n")
        (folder / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("IS_SANDBOX", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    _sandbox({"IS_SANDBOX": "1"})  # doctor run as root (as here) would say so first
    return repo


def _sandbox(env: dict[str, str]) -> None:
    config = orange_home() / "config.yml"
    config.write_text(yaml.safe_dump({"harness_env": {"claude": env}}))


def _errors(cli: Cli, repo: Path) -> list[dict[str, str]]:
    result = cli("doctor", "--json", cwd=repo)
    report = result.json()
    assert result.code == (0 if report["ok"] else 1)
    return [f for f in report["findings"] if f["level"] == "error"]


def test_doctor_names_the_screens_a_first_task_would_wait_on(
    fresh: Path, cli: Cli, hermetic: Path
) -> None:
    errors = _errors(cli, fresh)
    screens = {(f["check"], f["message"].split(" (")[0]) for f in errors}
    assert screens == {
        ("claude", "a first task would wait on the theme picker"),
        ("claude", "a first task would wait on the folder trust question"),
        ("claude", "a first task would wait on the bypass-permissions warning"),
        ("codex", "a first task would wait on the folder trust question"),
    }
    assert {f["fix"] for f in errors} == {
        "orange install --harness claude",
        "orange install --harness codex",
    }
    text = cli("doctor", cwd=fresh)
    assert text.code == 1
    assert all(line.split()[0] in ("ok", "warn", "error") for line in text.out.splitlines())

    cli.ok("install", "--harness", "claude", "--yes", cwd=fresh)
    cli.ok("install", "--harness", "codex", "--yes", cwd=fresh)
    assert _errors(cli, fresh) == []


def test_doctor_names_a_config_its_agents_or_notices_cannot_use(
    fresh: Path, cli: Cli, hermetic: Path
) -> None:
    cli.ok("install", "--harness", "claude", "--yes", cwd=fresh)
    cli.ok("install", "--harness", "codex", "--yes", cwd=fresh)
    config = {"harness_env": {"claude": {"IS_SANDBOX": "1"}, "codex": ["A=1"]}, "notify": 5}
    (orange_home() / "config.yml").write_text(yaml.safe_dump(config))
    result = cli("doctor", "--json", cwd=fresh)
    assert result.code == 1
    found = {(f["check"], f["level"], f["message"]) for f in result.json()["findings"]}
    assert (
        "codex",
        "error",
        f"{orange_home() / 'config.yml'}: harness_env.codex: must map variable names to "
        'strings (IS_SANDBOX: "1")',
    ) in found
    assert ("notify", "warn", "config.yml: notify must be a mapping (desktop:, webhook:)") in found
    assert not [f for f in found if f[0] == "claude" and f[1] == "error"]


def test_install_without_consent_refuses_in_one_line_and_writes_nothing(
    fresh: Path, cli: Cli, hermetic: Path
) -> None:
    result = cli("install", "--harness", "claude", cwd=fresh, stdin="")
    assert result.code == 1
    assert len(result.err.strip().splitlines()) == 1 and "--yes" in result.err
    assert not (hermetic / ".claude.json").exists()
    assert not (hermetic / ".claude").exists()  # not the skills either


def test_install_yes_settles_each_screen_and_keeps_the_users_settings(
    fresh: Path, cli: Cli, hermetic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-ant-test-0123456789abcdefghijklmnop"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    (hermetic / ".claude.json").write_text(json.dumps({"userID": "me", "projects": {}}))
    (hermetic / ".codex").mkdir()
    untrusted = hermetic / "elsewhere"
    (hermetic / ".codex" / "config.toml").write_text(
        f'model = "mine"\n\n[projects."{untrusted}"]\ntrust_level = "untrusted"\n'
    )
    out = cli.ok("install", "--harness", "claude", "--yes", "--json", cwd=fresh).json()
    assert out["settled"]
    state = json.loads((hermetic / ".claude.json").read_text())
    assert state["userID"] == "me" and state["hasCompletedOnboarding"] is True
    checkout = str(fresh.resolve())
    slot = str((orange_home() / "workspaces" / "proj--1").resolve())
    assert state["projects"][checkout]["hasTrustDialogAccepted"] is True
    assert state["projects"][slot]["hasTrustDialogAccepted"] is True
    assert state["customApiKeyResponses"]["approved"] == [key[-20:]]
    settings = json.loads((hermetic / ".claude" / "settings.json").read_text())
    assert settings["skipDangerousModePermissionPrompt"] is True
    assert settings["hooks"]["Stop"]  # the stop hook install writes to the same file

    cli.ok("install", "--harness", "codex", "--yes", cwd=fresh)
    config = tomllib.loads((hermetic / ".codex" / "config.toml").read_text())
    assert config["model"] == "mine"
    assert config["projects"][checkout] == {"trust_level": "trusted"}
    assert config["projects"][str(untrusted)] == {"trust_level": "untrusted"}  # theirs

    again = cli.ok("install", "--harness", "claude", "--json", cwd=fresh).json()
    assert again["settled"] == []  # nothing left to ask: no consent needed


def test_install_approves_the_key_agents_get_and_keeps_a_rejected_one(
    fresh: Path, cli: Cli, hermetic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    agents_key = "sk-ant-agents-0123456789abcdefghijklmnop"
    (orange_home() / "config.yml").write_text(
        f"harness_env:\n  claude:\n    ANTHROPIC_API_KEY: {agents_key}\n"
    )
    cli.ok("install", "--harness", "claude", "--yes", cwd=fresh)
    state = json.loads((hermetic / ".claude.json").read_text())
    assert state["customApiKeyResponses"]["approved"] == [agents_key[-20:]]
    # A key the person answered "No" for stays theirs.
    refused = "sk-ant-refused-abcdefghijklmnopqrstuvwx"
    state["customApiKeyResponses"] = {"approved": [], "rejected": [refused[-20:]]}
    (hermetic / ".claude.json").write_text(json.dumps(state))
    (orange_home() / "config.yml").write_text("")
    monkeypatch.setenv("ANTHROPIC_API_KEY", refused)
    cli.ok("install", "--harness", "claude", "--yes", cwd=fresh)
    state = json.loads((hermetic / ".claude.json").read_text())
    assert state["customApiKeyResponses"] == {"approved": [], "rejected": [refused[-20:]]}


def test_claude_as_root_needs_is_sandbox(fresh: Path, hermetic: Path) -> None:
    def root_findings() -> list[str]:
        found = check(hermetic, fresh, root=True)
        return [f.message for f in found if f.message.startswith("running as root")]

    _sandbox({})
    assert len(root_findings()) == 1
    assert not [f for f in check(hermetic, fresh, root=False) if "as root" in f.message]
    _sandbox({"IS_SANDBOX": "1"})
    assert root_findings() == []
