"""`orange install`: skills, Claude Code settings and the stop hook, idempotently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import frontmatter
import pytest

from orange.errors import InvalidInput
from orange.ops import install as install_module
from orange.ops.install import install
from orange.runtime.harness import ORANGE_PERMISSIONS


@pytest.fixture
def agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """claude and opencode on an otherwise empty PATH (plus sh for the hook test)."""
    path = tmp_path / "bin"
    path.mkdir()
    for name in ("claude", "opencode"):
        exe = path / name
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{path}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return path


def test_installs_for_detected_harnesses_in_the_hermetic_home(agents: Path, hermetic: Path) -> None:
    results = install()
    paths = {path.relative_to(hermetic).as_posix(): outcome for path, outcome in results}
    assert paths == {
        ".claude/skills/orange-task/SKILL.md": "written",
        ".claude/skills/orange-orchestrator/SKILL.md": "written",
        ".claude/hooks/orange-stop.sh": "written",
        ".claude/hooks/orange-notify.sh": "written",
        ".claude/settings.json": "written",
        ".config/opencode/skills/orange-task/SKILL.md": "written",
        ".config/opencode/skills/orange-orchestrator/SKILL.md": "written",
        ".config/opencode/plugins/orange-stop.js": "written",
    }
    skill = (hermetic / ".claude/skills/orange-task/SKILL.md").read_text()
    post = frontmatter.loads(skill)
    assert skill.startswith("---\n") and post["name"] == "orange-task"
    assert str(post["description"]).startswith("How to work on an Orange task")
    for needle in (
        "APPROACH:",
        "TOUCHING:",
        "DONE:",
        "REMAINING:",
        "DECISIONS:",
        "UNCERTAIN:",
        "Verdict: PASS",
        "Verdict: FAIL",
        "orange task update --status",
        "git push",
    ):
        assert needle in skill  # fmt: skip
    orchestrator = (hermetic / ".claude/skills/orange-orchestrator/SKILL.md").read_text()
    assert 'orange task create BRANCH "summary" --context -' in orchestrator
    assert "orange task list" in orchestrator
    settings = json.loads((hermetic / ".claude/settings.json").read_text())
    # the agent's commands only, never every `orange` command (issue 24, finding 4)
    assert settings["permissions"]["allow"] == list(ORANGE_PERMISSIONS)
    assert "Bash(orange task update:*)" in ORANGE_PERMISSIONS
    [group] = settings["hooks"]["Stop"]
    assert group["hooks"][0]["type"] == "command"
    assert group["hooks"][0]["command"].endswith("orange-stop.sh")
    assert os.access(hermetic / ".claude/hooks/orange-stop.sh", os.X_OK)
    # Claude Code's Notification hook beside it: a waiting agent is named at once.
    [group] = settings["hooks"]["Notification"]
    assert group["hooks"][0]["command"].endswith("orange-notify.sh")
    shim = (hermetic / ".claude/hooks/orange-notify.sh").read_text()
    assert "-m orange.monitor.notified" in shim and os.access(
        hermetic / ".claude/hooks/orange-notify.sh", os.X_OK
    )


def test_second_run_changes_nothing(agents: Path) -> None:
    install()
    again = install()
    assert again and all(outcome == "unchanged" for _, outcome in again)


def test_a_skill_is_compared_by_its_frontmatter_and_text(agents: Path, hermetic: Path) -> None:
    install("claude")
    path = hermetic / ".claude/skills/orange-task/SKILL.md"
    post = frontmatter.loads(path.read_text())
    # The same skill with its keys in another order (as the Agent Skills docs show it).
    reordered = f"---\nname: {post['name']}\ndescription: {post['description']}\n---\n\n"
    path.write_text(reordered + post.content + "\n")
    assert dict(install("claude"))[path] == "unchanged"
    path.write_text(reordered.replace("How to work", "How not to work") + post.content)
    assert dict(install("claude"))[path] == "written"
    assert frontmatter.loads(path.read_text())["description"] == post["description"]


def test_existing_settings_are_merged_not_replaced(agents: Path, hermetic: Path) -> None:
    settings = hermetic / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    other = {"hooks": [{"type": "command", "command": "notify-send done"}]}
    settings.write_text(json.dumps({
        "model": "opus",
        "permissions": {"allow": ["Read", "Bash(orange:*)"], "deny": ["Bash(rm:*)"]},
        "hooks": {"Stop": [other], "PreToolUse": [{"matcher": "Bash", "hooks": []}]},
    }))  # fmt: skip
    install("claude")
    data = json.loads(settings.read_text())
    assert data["model"] == "opus"
    # what Orange wrote before (every `orange` command) gives way to the agent's commands
    allow = ["Read", *ORANGE_PERMISSIONS]
    assert data["permissions"] == {"allow": allow, "deny": ["Bash(rm:*)"]}
    assert data["hooks"]["PreToolUse"] == [{"matcher": "Bash", "hooks": []}]
    assert data["hooks"]["Stop"][0] == other and len(data["hooks"]["Stop"]) == 2
    assert {p.name: o for p, o in install("claude")}["settings.json"] == "unchanged"


def test_broken_settings_are_left_alone(agents: Path, hermetic: Path) -> None:
    settings = hermetic / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text("{not json")
    with pytest.raises(InvalidInput, match="not valid JSON"):
        install("claude")
    assert settings.read_text() == "{not json"


def test_named_harness_only(agents: Path, hermetic: Path) -> None:
    results = install("codex")  # not on PATH: installed anyway when asked for by name
    assert {p.relative_to(hermetic).as_posix() for p, _ in results} == {
        ".agents/skills/orange-task/SKILL.md",
        ".agents/skills/orange-orchestrator/SKILL.md",
        ".codex/hooks/orange-stop.sh",
        ".codex/hooks.json",
    }
    with pytest.raises(InvalidInput, match='unknown harness "nope"'):
        install("nope")


def test_the_demo_stand_in_needs_no_install(hermetic: Path) -> None:
    with pytest.raises(InvalidInput, match="scripted stand-in: it needs nothing installed"):
        install("demo", home=hermetic)
    assert not (hermetic / ".claude").exists()


def test_nothing_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(InvalidInput, match="no coding agent found"):
        install()


def recording_orange(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """An `orange` for the installed hooks to call that records its arguments as JSON
    in the first path returned (the second is the program)."""
    calls = tmp_path / "calls.json"
    fake_orange = tmp_path / "fake-orange"
    fake_orange.write_text(
        f"#!/bin/sh\nexec {sys.executable} -c "
        f'\'import json, sys; json.dump(sys.argv[1:], open("{calls}", "w"))\' "$@"\n'
    )
    fake_orange.chmod(0o755)
    monkeypatch.setattr(install_module, "_orange_bin", lambda: str(fake_orange))
    return calls, fake_orange


def test_stop_hook_reports_the_outcome(
    agents: Path, hermetic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls, _ = recording_orange(tmp_path, monkeypatch)
    install("claude")
    hook = hermetic / ".claude" / "hooks" / "orange-stop.sh"
    project = tmp_path / "worktree"
    project.mkdir()
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}

    subprocess.run([str(hook)], cwd=tmp_path, env=env, check=True)  # no .orange-task
    assert not calls.exists()

    reason = "it's stuck; $(touch pwned) `id`"
    (project / ".orange-task").write_text(
        json.dumps({"id": "abc", "outcome": "stuck", "reason": reason})
    )
    subprocess.run([str(hook)], cwd=tmp_path, env=env, check=True)
    assert json.loads(calls.read_text()) == ["task", "stuck", "abc", f"--reason={reason}"]
    assert json.loads((project / ".orange-task").read_text()) == {"id": "abc"}
    assert not (project / "pwned").exists()

    calls.unlink()
    subprocess.run([str(hook)], cwd=tmp_path, env=env, check=True)  # already reported
    assert not calls.exists()
    (project / ".orange-task").write_text('{"id": "abc", "outcome": "passed"}')
    subprocess.run([str(hook)], cwd=tmp_path, env=env, check=True)
    assert json.loads(calls.read_text()) == ["task", "complete", "abc"]


def test_cli_command_prints_each_file(agents: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from orange.cli.install import install as command

    command(harness="opencode")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all(line.startswith("written") for line in lines[:3])
    assert lines[3] == f"note: {install_module.RELOAD['opencode']}"
    command(harness="opencode")
    assert all(line.startswith("unchanged") for line in capsys.readouterr().out.splitlines())


# Plays `orange` for the hook: `task show` says the task is a self-review worker's,
# still working; `task complete` / `task stuck` are recorded.
FAKE_ORANGE = """#!__PYTHON__
import json, sys
if sys.argv[1:3] == ["task", "show"]:
    print(json.dumps({"id": sys.argv[3], "workflow": "self-review", "status": "working"}))
else:
    json.dump(sys.argv[1:], open(__CALLS__, "w"))
"""


def test_codex_stop_hook_keeps_codex_going_until_the_outcome_is_written(
    agents: Path, hermetic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`orange install --harness codex` registers a Stop hook in ~/.codex/hooks.json
    (merged with the user's own hooks); run as codex runs it (`$SHELL -lc COMMAND` in the
    session's directory, the event as JSON on stdin), it exits 2 with what is missing
    on stderr, codex's "continue with this prompt", until the outcome is reported."""
    calls = tmp_path / "calls.json"
    fake_orange = tmp_path / "fake-orange"
    fake_orange.write_text(
        FAKE_ORANGE.replace("__PYTHON__", sys.executable).replace("__CALLS__", repr(str(calls)))
    )
    fake_orange.chmod(0o755)
    monkeypatch.setattr(install_module, "_orange_bin", lambda: str(fake_orange))
    hooks_json = hermetic / ".codex" / "hooks.json"
    hooks_json.parent.mkdir()
    mine = {"hooks": [{"type": "command", "command": "npm test"}]}
    hooks_json.write_text(json.dumps({"hooks": {"Stop": [mine]}, "other": 1}))
    install("codex")
    data = json.loads(hooks_json.read_text())
    script = hermetic / ".codex" / "hooks" / "orange-stop.sh"
    ours = {"hooks": [{"type": "command", "command": str(script)}]}
    assert data == {"hooks": {"Stop": [mine, ours]}, "other": 1}
    assert {p.name: o for p, o in install("codex")}["hooks.json"] == "unchanged"

    worktree = tmp_path / "worktree"
    subprocess.run(["git", "init", "-q", str(worktree)], check=True)  # as a pool worktree
    env = {**os.environ, "ORANGE_TASK_ID": "abc", "ORANGE_AGENT_ROLE": "worker"}
    event = {"hook_event_name": "Stop", "cwd": str(worktree), "stop_hook_active": False}

    def stop() -> subprocess.CompletedProcess[str]:
        shell = os.environ.get("SHELL") or "/bin/sh"
        return subprocess.run(
            [shell, "-lc", str(ours["hooks"][0]["command"])],
            cwd=worktree, env=env, input=json.dumps(event), capture_output=True, text=True,
        )  # fmt: skip

    first = stop()
    assert first.returncode == 2 and not calls.exists()
    assert first.stderr.startswith(
        f"Orange: task abc has no outcome: {worktree}/.orange-task is missing or holds no"
    )
    (worktree / ".orange-task").write_text('{"id": "abc", "outcome": "passed"}')
    event["stop_hook_active"] = True
    second = stop()
    assert (second.returncode, second.stderr) == (0, "")
    assert json.loads(calls.read_text()) == ["task", "complete", "abc"]


def test_a_hook_input_left_open_never_holds_the_agent(
    hermetic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A harness that leaves the hook's standard input open and writes nothing still
    gets the check's answer: the hook reads its input only if some arrives at once."""
    fake_orange = tmp_path / "fake-orange"
    fake_orange.write_text(
        FAKE_ORANGE.replace("__PYTHON__", sys.executable).replace(
            "__CALLS__", repr(str(tmp_path / "calls.json"))
        )
    )
    fake_orange.chmod(0o755)
    monkeypatch.setattr(install_module, "_orange_bin", lambda: str(fake_orange))
    install("claude")
    worktree = tmp_path / "worktree"
    subprocess.run(["git", "init", "-q", str(worktree)], check=True)
    env = {**os.environ, "ORANGE_TASK_ID": "abc", "ORANGE_AGENT_ROLE": "worker"}
    script = hermetic / ".claude" / "hooks" / "orange-stop.sh"
    hook = subprocess.Popen(
        [str(script)], cwd=worktree, env=env, stdin=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert hook.wait(timeout=60) == 2  # its input still open
        assert hook.stderr is not None
        assert hook.stderr.read().decode().startswith("Orange: task abc has no outcome: ")
    finally:
        hook.kill()
        hook.wait()
        for stream in (hook.stdin, hook.stderr):
            if stream is not None:
                stream.close()


def test_cli_says_codex_must_trust_its_new_hook(
    agents: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from orange.cli.install import install as command

    command(harness="codex", json_out=True)
    first = json.loads(capsys.readouterr().out)
    assert first["notes"] == [install_module.CODEX_TRUST]
    command(harness="codex")  # nothing new to trust
    assert "note:" not in capsys.readouterr().out
