"""``orange host add/check/list/remove`` against a real SSH server on 127.0.0.1: the
other host is a second Orange home and clone, reached only through it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from orange import projects
from orange.home import orange_home
from orange.hosts import roster
from orange.hosts.probe import PROTOCOL, missing
from orange.hosts.roster import Host
from tests.conftest import Cli, orange_bin
from tests.hosts.conftest import make_other
from tests.ssh import SshServer


def test_add_checks_the_host_in_one_round_trip_and_registers_it(
    cli: Cli, repo: Path, hub: Path, tmp_path: Path, ssh_server: SshServer
) -> None:
    other = make_other(tmp_path, hub)
    added = cli(*other.add_args(ssh_server), "--json", cwd=repo)
    assert added.code == 0, added.err
    data = added.json()
    assert data["ok"] is True
    assert data["missing"] == []
    assert data["reports_as"] == "otherbox"
    assert data["projects"] == {"proj": "proj"}
    assert data["free"] == 2
    listed = cli.ok("host", "list", "--json", cwd=repo).json()["hosts"]
    assert [(h["name"], h["target"], h["pools"]) for h in listed] == [
        ("box", "other", [{"project": "proj", "size": 2, "used": 0, "running": {}}])
    ]
    # Hosts turn the project's automatic sync on (a host's work reaches here by it).
    projects = json.loads((orange_home() / "projects.json").read_text())["projects"]
    assert projects[0]["sync_interval"] > 0


def test_a_relative_ssh_config_still_reaches_the_host_from_another_folder(
    cli: Cli, repo: Path, hub: Path, tmp_path: Path, ssh_server: SshServer
) -> None:
    args = make_other(tmp_path, hub).add_args(ssh_server)
    config = Path(args[args.index("--ssh-config") + 1])
    args[args.index("--ssh-config") + 1] = os.path.relpath(config, repo)
    cli.ok(*args, cwd=repo)
    elsewhere = tmp_path / "elsewhere" / "deeper"  # where the relative path leads nowhere
    elsewhere.mkdir(parents=True)
    checked = cli("host", "check", "box", "--project", "proj", "--json", cwd=elsewhere)
    assert checked.code == 0, checked.err
    assert checked.json()["hosts"][0]["ok"] is True


def test_add_names_each_missing_thing_in_one_line(
    cli: Cli, repo: Path, hub: Path, tmp_path: Path, ssh_server: SshServer
) -> None:
    other = make_other(tmp_path, hub, register=False)
    (Path(other.env["ORANGE_HOME"]) / "config.yml").write_text("{}\n")
    (orange_home() / "config.yml").write_text(
        "harnesses:\n  fake:\n    command: [sh, -c, 'sleep 1', '{prompt}']\n"
    )
    cli.ok("task", "create", "--no-spawn", "--harness", "fake", "b1", "Work", cwd=repo)
    added = cli(*other.add_args(ssh_server), cwd=repo)
    assert added.code == 1
    missing = [line for line in added.out.splitlines() if "missing:" in line]
    assert missing == [
        f"host box: missing: project proj is not cloned and registered there with the sync "
        f"remote {hub}: `git clone {hub}` there, then `orange project add`",
        "host box: missing: agent fake is not installed there (or not on its PATH)",
    ]


def test_an_unreachable_host_is_one_line_and_changes_nothing(
    cli: Cli, repo: Path, hub: Path, tmp_path: Path, ssh_server: SshServer
) -> None:
    other = make_other(tmp_path, hub)
    args = other.add_args(ssh_server)
    args[args.index("--ssh-config") + 1] = str(ssh_server.unreachable_config(tmp_path))
    added = cli(*args, cwd=repo)
    assert added.code == 1
    assert len(added.err.strip().splitlines()) == 1
    assert "host box (other) unreachable" in added.err
    assert "nothing registered; once ssh reaches other, run this again" in added.err
    assert "orange host check" not in added.err  # there is no host box to check
    args[args.index("--ssh-config") + 1] = str(tmp_path / "no-such-config")
    missing = cli(*args, cwd=repo)
    assert missing.code == 1
    assert (
        missing.err
        == f"orange: no ssh config file {tmp_path / 'no-such-config'} (give --ssh-config a file)\n"
    )
    assert not (orange_home() / "hosts.json").exists()
    projects = json.loads((orange_home() / "projects.json").read_text())["projects"]
    assert projects[0]["sync_interval"] == 0


def test_a_mistyped_add_of_a_registered_host_leaves_its_record_alone(
    cli: Cli, repo: Path, hub: Path, tmp_path: Path, ssh_server: SshServer
) -> None:
    other = make_other(tmp_path, hub)
    args = other.add_args(ssh_server)
    cli.ok(*args, cwd=repo)
    before = (orange_home() / "hosts.json").read_text()
    args[args.index("--ssh-config") + 1] = str(ssh_server.unreachable_config(tmp_path))
    again = cli(*args, cwd=repo)
    assert again.code == 1
    assert "host box (other) unreachable" in again.err
    assert (orange_home() / "hosts.json").read_text() == before
    listed = cli.ok("host", "list", "--json", cwd=repo).json()["hosts"]
    assert [h["unreachable_since"] for h in listed] == [None]


def test_a_host_without_orange_says_so(
    cli: Cli, repo: Path, hub: Path, tmp_path: Path, ssh_server: SshServer
) -> None:
    other = make_other(tmp_path, hub)
    args = other.add_args(ssh_server)
    args[args.index("--orange") + 1] = str(tmp_path / "no-orange-here")
    added = cli(*args, cwd=repo)
    assert added.code == 1
    assert "host box: Orange is not installed there, or too old to answer" in added.err
    assert not (orange_home() / "hosts.json").exists()
    assert orange_bin()


def test_what_doctor_finds_missing_there_is_said(
    cli: Cli, repo: Path, hub: Path, tmp_path: Path, ssh_server: SshServer
) -> None:
    # The host's tmux is not on its PATH: its own `orange doctor` says so, and so does
    # `host add` here, with doctor's fix.
    other = make_other(tmp_path, hub)
    programs = tmp_path / "no-tmux-bin"
    programs.mkdir()
    (programs / "git").symlink_to(str(shutil.which("git")))
    other.env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{programs}"
    added = cli(*other.add_args(ssh_server), cwd=repo)
    assert added.code == 1
    missing = [line for line in added.out.splitlines() if "missing:" in line]
    assert missing == [
        "host box: missing: tmux is not on PATH there (fix there: install tmux 3.0 or newer)"
    ]


def test_a_host_that_records_itself_under_this_hosts_name_is_told(
    cli: Cli, repo: Path, hub: Path, tmp_path: Path, ssh_server: SshServer
) -> None:
    other = make_other(tmp_path, hub)
    other.env["ORANGE_HOST"] = "testhost"  # this host's name (the hermetic fixture's)
    added = cli(*other.add_args(ssh_server), cwd=repo)
    assert added.code == 1
    assert "host box: missing: it records itself as 'testhost', as this host does" in added.out


def test_a_task_for_an_unreachable_host_stays_parked_here(
    cli: Cli, repo: Path, hub: Path, tmp_path: Path, ssh_server: SshServer
) -> None:
    other = make_other(tmp_path, hub)
    cli.ok(*other.add_args(ssh_server), cwd=repo)
    hosts = orange_home() / "hosts.json"
    data = json.loads(hosts.read_text())
    data["hosts"][0]["ssh_config"] = str(ssh_server.unreachable_config(tmp_path))
    hosts.write_text(json.dumps(data))
    made = cli("task", "create", "--host", "box", "--budget", "5", "b1", "Work", cwd=repo)
    assert made.code == 1
    lines = made.err.strip().splitlines()
    assert len(lines) == 1
    assert "created but not started on host box: host box (other) unreachable" in lines[0]
    listed = cli.ok("task", "list", "--json", cwd=repo).json()
    tasks = listed["tasks"] if isinstance(listed, dict) else listed
    assert [(t["branch"], t["status"], t.get("workspace") or "") for t in tasks] == [
        ("b1", "pending", "")
    ]
    shown = cli.ok("task", "show", tasks[0]["id"], "--json", cwd=repo).json()
    assert shown["budget_usd"] == "5.00"  # --budget is kept with --host too


def test_a_project_registered_there_under_another_name_is_told(
    cli: Cli, repo: Path, hub: Path, tmp_path: Path, ssh_server: SshServer
) -> None:
    other = make_other(tmp_path, hub, register=False)
    assert other.orange("project", "add", "--name", "proj-b").code == 0
    added = cli(*other.add_args(ssh_server), cwd=repo)
    assert added.code == 1
    assert (
        "host box: missing: the project is registered there as 'proj-b', not proj: there, "
        "`orange project remove proj-b`, then `orange project add --name proj`"
    ) in added.out


def test_a_malformed_answer_is_data_not_a_crash(repo: Path, hub: Path) -> None:
    answer = {"protocol": PROTOCOL, "host": ["x"], "projects": 5, "doctor": {"findings": 7}}
    checked = missing(Host("box", "other"), projects.get("proj"), answer)
    assert checked.missing == (
        f"project proj is not cloned and registered there with the sync remote {hub}: "
        f"`git clone {hub}` there, then `orange project add`",
    )
    assert checked.free == 0


def test_an_agent_that_doctor_finds_wrong_there_is_not_ready(
    cli: Cli, repo: Path, hub: Path
) -> None:
    (orange_home() / "config.yml").write_text(
        "harnesses:\n  fake:\n    command: [sh, -c, 'sleep 1', '{prompt}']\n"
    )
    cli.ok("task", "create", "--no-spawn", "--harness", "fake", "b1", "Work", cwd=repo)
    url = str(hub)
    found = [
        {"check": "fake", "level": "ok", "message": "sh is /bin/sh", "fix": ""},
        {"check": "fake", "level": "error", "message": "it refuses\x1b[2J", "fix": "log in"},
        {"check": "other", "level": "ok", "message": "x is /bin/x", "fix": ""},
    ]
    answer = {
        "protocol": PROTOCOL,
        "host": "box",
        "projects": [{"name": "proj", "url": url, "pool_size": 2, "pool_used": 0}],
        "doctor": {"ok": False, "findings": found},
    }
    checked = missing(Host("box", "other"), projects.get("proj"), answer)
    assert checked.missing == ("agent fake there: it refuses\\x1b[2J (fix there: log in)",)
    assert checked.host.agents == ("demo", "other")


def test_an_agent_installed_only_there_starts_there(
    cli: Cli, repo: Path, hub: Path, tmp_path: Path, ssh_server: SshServer
) -> None:
    other = make_other(tmp_path, hub)  # its config has the scripted agent "fake"; here none
    cli.ok(*other.add_args(ssh_server), cwd=repo)
    try:
        made = cli.ok(
            "task", "create", "--host", "box", "--harness", "fake", "b1", "Work", "--json", cwd=repo
        ).json()
        assert (made["host"], made["harness"]) == ("otherbox", "fake")
        absent = cli("task", "create", "--host", "box", "--harness", "claude", "b2", "x", cwd=repo)
        assert absent.code == 1
        assert "agent claude is not installed on host box (it has: " in absent.err
    finally:
        subprocess.run(["tmux", "-L", other.socket, "kill-server"], capture_output=True)


def test_two_hosts_that_record_themselves_alike_reach_neither(repo: Path, hub: Path) -> None:
    box = Host("box", "other", reports_as="otherbox", projects=(("proj", "proj"),))
    roster.save(box)
    assert roster.by_reported("otherbox") == box
    answer = {"protocol": PROTOCOL, "host": "otherbox", "projects": [], "doctor": {}}
    checked = missing(Host("twin", "twin"), projects.get("proj"), answer)
    assert "it records itself as 'otherbox', as host box does" in checked.missing
    roster.save(checked.host)  # registered all the same (`host add` saves, exits 1)
    assert roster.by_reported("otherbox") is None  # a task bound there reaches neither
