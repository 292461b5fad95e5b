"""The real-agents tier: the four real programs (installed once, `programs.py`) in real
tmux, run by a real Orange on a real git repository, talking to the scripted model on
127.0.0.1 (`modelserver.py`).

Each test gets the e2e suite's hermetic HOME, ORANGE_HOME and tmux socket (the `world`
fixture of `tests/e2e`), plus: the programs and node first on PATH, and in HOME the
configuration that points each program at the scripted model.  `settle` writes what a
user who already answered each program's first-use screens has in HOME (the tests of
those screens start without it).

As root, Claude Code refuses `--dangerously-skip-permissions` unless `IS_SANDBOX=1` is
in its environment: the tier sets it when it runs as root (so do containers and CI
boxes that run Orange as root; the README says so).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from orange.home import orange_home
from tests.agents.modelserver import ModelServer, Script
from tests.agents.programs import NODE_BIN, OPENCODE_CONFIG, install
from tests.e2e.conftest import World, world  # noqa: F401  (the fixture, used here)

API_KEY = "sk-ant-test-0123456789abcdefghijklmnop"  # a dummy; the scripted model takes any


@pytest.fixture(scope="session")
def programs() -> Path:
    """The folder holding the four programs' launchers (downloaded on the first run)."""
    return install()


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script()) as server:
        yield server


@pytest.fixture
def agents(
    world: World,  # noqa: F811
    model: ModelServer,
    programs: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[World]:
    """The e2e world with the real programs on PATH, each pointed at ``model``."""
    monkeypatch.setenv("PATH", f"{programs}{os.pathsep}{NODE_BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    # No update checks, telemetry or other calls out of the machine.
    monkeypatch.setenv("DISABLE_AUTOUPDATER", "1")
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    monkeypatch.setenv("OPENCODE_DISABLE_AUTOUPDATE", "1")
    # opencode fetches its model list from models.dev first; offline that waits ~55 s.
    monkeypatch.setenv("OPENCODE_DISABLE_MODELS_FETCH", "1")
    monkeypatch.setenv("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
    if os.geteuid() == 0:
        monkeypatch.setenv("IS_SANDBOX", "1")
    point_at_model(Path.home(), model.url)
    # What opencode installs into its configuration folder on its first start, installed
    # once (`programs.py`); linked file by file where it can be (a symlinked
    # node_modules it installs again).
    opencode = Path.home() / ".config" / "opencode"
    shutil.copytree(programs.parent.parent / OPENCODE_CONFIG, opencode,
                    copy_function=_link, dirs_exist_ok=True)  # fmt: skip
    onboarded(Path.home())
    yield world
    # What the model was asked and did, for a failure's report.
    log = world.repo.parent / "model-requests.jsonl"
    log.write_text(
        "".join(
            json.dumps({"path": r.path, "body": r.body, "reply": str(r.reply)}) + "\n"
            for r in model.requests
        )
    )
    print(f"model requests: {log}", "model ran:", *model.calls(), sep="\n  ")


def point_at_model(home: Path, url: str) -> None:
    """Each program's own configuration naming the scripted model as its provider."""
    codex = home / ".codex"
    codex.mkdir(parents=True, exist_ok=True)
    # https://developers.openai.com/codex/config-reference: model_providers.<id>.
    (codex / "config.toml").write_text(
        'model = "scripted-model"\nmodel_provider = "scripted"\n'
        "check_for_update_on_startup = false\n\n"
        f'[model_providers.scripted]\nname = "scripted"\nbase_url = "{url}/v1"\n'
        'wire_api = "responses"\n'
    )
    opencode = home / ".config" / "opencode"
    opencode.mkdir(parents=True, exist_ok=True)
    provider = {
        "npm": "@ai-sdk/openai-compatible",  # https://opencode.ai/docs/providers (custom)
        "name": "Scripted",
        "options": {"baseURL": f"{url}/v1", "apiKey": "sk-test"},
        "models": {"scripted-model": {"name": "Scripted"}},
    }
    (opencode / "opencode.json").write_text(
        json.dumps(
            {
                "$schema": "https://opencode.ai/config.json",
                "autoupdate": False,
                "share": "disabled",
                "snapshot": False,  # no git snapshot of the worktree at each step (slow)
                "model": "scripted/scripted-model",
                "provider": {"scripted": provider},
            }
        )
    )
    pi = home / ".pi" / "agent"
    pi.mkdir(parents=True, exist_ok=True)
    (pi / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "scripted": {
                        "baseUrl": f"{url}/v1",
                        "api": "openai-completions",
                        "apiKey": "sk-test",
                        "models": [{"id": "scripted-model"}],
                    }
                }
            }
        )
    )
    (pi / "settings.json").write_text(
        json.dumps({"defaultProvider": "scripted", "defaultModel": "scripted-model"})
    )


def _link(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system
        shutil.copy2(source, target)


def onboarded(home: Path) -> None:
    """Claude Code's own onboarding done, as for anyone who has used it: a fresh HOME
    starts with a login that calls api.anthropic.com, which a test machine cannot reach
    (it exits 1, "Unable to connect to Anthropic services")."""
    path = home / ".claude.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    data["hasCompletedOnboarding"] = True
    path.write_text(json.dumps(data))


def settle(repo: Path, pool: int = 2) -> None:
    """What a user who answered the first-use screens once has in HOME (HARNESSES.md):
    Claude Code's folder trust for the project's main checkout, the
    bypass-permissions warning and the API key approval; codex's folder trust (for the
    checkout and the pool's worktrees)."""
    home = Path.home()
    worktrees = [orange_home() / "workspaces" / f"{repo.name}--{n}" for n in range(1, pool + 1)]
    claude_json = home / ".claude.json"
    data = json.loads(claude_json.read_text()) if claude_json.is_file() else {}
    data.setdefault("customApiKeyResponses", {"approved": [API_KEY[-20:]], "rejected": []})
    projects = data.setdefault("projects", {})
    for place in [repo, *worktrees]:
        projects.setdefault(str(place), {})["hasTrustDialogAccepted"] = True
    claude_json.write_text(json.dumps(data))
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    current = json.loads(settings.read_text()) if settings.is_file() else {}
    current["skipDangerousModePermissionPrompt"] = True
    settings.write_text(json.dumps(current))
    config = home / ".codex" / "config.toml"
    text = config.read_text() if config.is_file() else ""
    for place in [repo, *worktrees]:
        text += f'\n[projects."{place}"]\ntrust_level = "trusted"\n'
    config.write_text(text)


def screens(of: World) -> str:
    """What every pane of the test's tmux server shows, for a failure's message."""
    panes = of.tmux("list-panes", "-a", "-F", "#{session_name}:#{window_name}").split()
    return "".join(f"--- {pane}:\n{of.tmux('capture-pane', '-p', '-t', pane)}" for pane in panes)
