"""Starting the background monitor is said once, on stderr."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from orange.engine.caller import ROLE_VARIABLE
from orange.home import orange_home
from orange.runtime import watcher
from orange.runtime.tmux import Tmux
from tests.conftest import Cli
from tests.helpers import retry_until
from tests.processes import processes_under, wait_gone


def test_the_first_start_is_announced_once(
    hermetic: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ORANGE_MONITOR", "on")
    watcher.ensure_running()  # no project: the monitor looks once and exits
    first = capsys.readouterr().err
    assert first == watcher.ANNOUNCEMENT + "\n"
    assert wait_gone(hermetic, timeout=20) == []
    watcher.ensure_running()
    assert capsys.readouterr().err == ""
    assert wait_gone(hermetic, timeout=20) == []


def test_a_folder_holding_an_orange_package_never_stands_in_for_orange(
    hermetic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The monitor Orange starts, and the pass tmux runs when an agent dies, run this
    Orange whatever folder they start in: an agent's worktree of a project with a
    package named ``orange``, or tmux's own folder (often HOME, beside ``~/orange``)."""
    here = tmp_path / "project"
    (here / "orange").mkdir(parents=True)
    (here / "orange" / "__init__.py").write_text("raise SystemExit(7)\n")
    socket = f"orange-test-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("ORANGE_TMUX_SOCKET", socket)
    subprocess.run(["tmux", "-L", socket, "new-session", "-d", "sleep 600"], check=True)
    try:
        watcher.install_tmux_hooks(Tmux())
        script = watcher.state_dir() / "on-agent-exit.sh"
        assert subprocess.run([str(script)], cwd=here, check=False).returncode == 0
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], check=False)
    monkeypatch.chdir(here)
    monkeypatch.setenv("ORANGE_MONITOR", "on")
    watcher.ensure_running()  # no project: the monitor looks once and exits
    log = orange_home() / "logs" / "monitor.log"
    retry_until(lambda: "monitor exits" in log.read_text(), timeout=20, what="the monitor's pass")
    assert wait_gone(hermetic, timeout=20) == []


def test_the_demo_stand_in_runs_this_orange_in_a_project_with_its_own(tmp_path: Path) -> None:
    """The demo harness's agent and the `orange` it calls run in the task's worktree:
    a project holding a package named ``orange`` never stands in for either."""
    from orange import demo_agent
    from orange.runtime import harness

    (tmp_path / "orange").mkdir()
    (tmp_path / "orange" / "__init__.py").write_text("raise SystemExit(7)\n")
    for command in ([*demo_agent.ORANGE, "--version"], [*harness._DEMO, "--help"]):
        done = subprocess.run(command, cwd=tmp_path, check=False, capture_output=True)
        assert done.returncode != 7, command


def test_a_stop_holds_until_orange_monitor_start(
    cli: Cli,
    hermetic: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`orange monitor stop` holds, with no monitor running, until `orange monitor
    start`: nothing starts one meanwhile, a loop asked for says why it does not run, a
    pass only notes; the start ends the stop and starts the loop."""
    monkeypatch.setenv("ORANGE_MONITOR", "on")
    assert "stays stopped until `orange monitor start`" in cli.ok("monitor", "stop").out
    monkeypatch.setattr(watcher, "_said", [])  # (said at most once a process)
    monkeypatch.setenv(ROLE_VARIABLE, "worker")  # an agent's move starting a reviewer
    watcher.ensure_running()  # what a spawn, the dashboard and git's hooks call
    assert capsys.readouterr().err == ""  # the agent can do nothing about it
    monkeypatch.delenv(ROLE_VARIABLE)
    watcher.ensure_running()  # a person's `task create`
    watcher.ensure_running()
    assert capsys.readouterr().err == watcher.STOPPED_SAID + "\n"
    assert processes_under(hermetic) == []
    assert "monitor: stopped by `orange monitor stop` at " in cli.ok("monitor", "status").out
    refused = cli("monitor")
    assert (refused.code, refused.out) == (1, "")
    assert "the monitor is stopped on this host" in refused.err
    assert "`orange monitor start` resumes it" in refused.err
    assert cli.ok("monitor", "--once", "--json").json()["stopped"] is True
    assert "the monitor is stopped" in cli.ok("monitor", "--once").err

    assert cli.ok("monitor", "start").out == "monitor started\n"
    assert "stopped" not in cli.ok("monitor", "status").out
    assert cli.ok("monitor", "--once", "--json").json()["stopped"] is False
    log = orange_home() / "logs" / "monitor.log"  # no project: it looks once and exits
    retry_until(lambda: "monitor exits" in log.read_text(), timeout=20, what="the loop's pass")
    assert wait_gone(hermetic, timeout=20) == []
