"""A project for `orange run` tests: a real repository with a bare origin, the scripted
architect/SWE (`fakes/agent.py`) as a harness with an ``exec_command``, and the fake
``gh`` on PATH."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import Cli, git, make_repo

FAKES = Path(__file__).parent / "fakes"
GH = Path(__file__).parents[1] / "e2e" / "fakes" / "gh"


class RunWorld:
    def __init__(self, tmp_path: Path, cli: Cli) -> None:
        self.tmp = tmp_path
        self.cli = cli
        self.repo = make_repo(tmp_path / "proj")
        self.agent_dir = tmp_path / "agent"
        self.agent_dir.mkdir()
        self.gh_dir = tmp_path / "gh-state"
        self.gh_dir.mkdir()
        self.origin = tmp_path / "origin.git"
        git(tmp_path, "init", "-q", "--bare", str(self.origin))
        git(self.repo, "remote", "add", "origin", str(self.origin))
        git(self.repo, "push", "-q", "origin", "main")

    def scenario(self, **values: Any) -> None:
        (self.agent_dir / "scenario.json").write_text(json.dumps(values))

    def calls(self, kind: str | None = None) -> list[list[Any]]:
        log = self.agent_dir / "calls.jsonl"
        rows = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
        return [r for r in rows if kind is None or r[0] == kind]

    def gh_calls(self) -> list[list[str]]:
        log = self.gh_dir / "calls.jsonl"
        return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []

    def answers(self, *lines: str) -> Path:
        path = self.tmp / "answers.txt"
        path.write_text("".join(f"{line}\n" for line in lines))
        return path

    def run(self, *args: str) -> Any:
        return self.cli("run", *args, cwd=self.repo)

    def tasks(self) -> list[dict[str, Any]]:
        out = self.cli.ok("task", "list", "--all", "--json", cwd=self.repo)
        return list(out.json()["tasks"])


def plan(groups: list[list[str]], titles: dict[str, str] | None = None) -> str:
    ids = [i for g in groups for i in g]
    titles = titles or {}
    return json.dumps(
        {
            "subtasks": [
                {"id": i, "title": titles.get(i, f"Title {i}"), "description": f"Build {i}."}
                for i in ids
            ],
            "parallel_groups": groups,
        }
    )


@pytest.fixture
def world(tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> RunWorld:
    w = RunWorld(tmp_path, cli)
    bin_dir = tmp_path / "gh-bin"
    bin_dir.mkdir()
    shutil.copy(GH, bin_dir / "gh")
    (bin_dir / "gh").chmod(0o755)
    monkeypatch.setenv("FAKE_GH_DIR", str(w.gh_dir))
    monkeypatch.setenv("FAKE_RUN_DIR", str(w.agent_dir))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    agent = [sys.executable, str(FAKES / "agent.py"), "{prompt}"]
    home = Path(os.environ["ORANGE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yml").write_text(
        yaml.safe_dump(
            {
                "harnesses": {
                    # The scripted agent calls no model: it costs nothing.
                    "fake": {"command": agent, "exec_command": agent, "usage": "none"},
                    "ghost": {
                        "command": ["orange-test-no-such-agent", "{prompt}"],
                        "exec_command": ["orange-test-no-such-agent", "{prompt}"],
                    },
                },
                "run": {"architect": "fake", "swe": "fake"},
            }
        )
    )
    cli.ok("project", "add", "--pool-size", "2", cwd=w.repo)
    w.scenario()
    return w
