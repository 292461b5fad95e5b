"""The trust rule of several machines (DESIGN §8, §11): no value from the ref reaches
an ``ssh`` command line but a validated task id.  A task's ``host`` field is only a
key into this host's registry; everything ssh is given comes from local
configuration.  The real ``ssh`` runs, behind a wrapper on PATH that records its argv.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from orange.store.events import Change
from orange.store.store import Snapshot
from tests.conftest import Cli, orange_bin
from tests.e2e.conftest import commit_behind_engine
from tests.helpers import retry_until
from tests.hosts.conftest import make_other
from tests.ssh import SshServer

HOSTILE = ["-oProxyCommand=touch {p}", "box", "other", "$(touch {p})"]


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder where every ssh call leaves its argv (NUL-separated), one file each."""
    folder, bin_dir = tmp_path / "ssh-calls", tmp_path / "ssh-bin"
    folder.mkdir()
    bin_dir.mkdir()
    wrapper = bin_dir / "ssh"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\0" "$@" > "{folder}/$$"\nexec /usr/bin/ssh "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return folder


def _recorded(folder: Path) -> list[list[str]]:
    found = [p.read_bytes().split(b"\0")[:-1] for p in sorted(folder.iterdir())]
    for path in folder.iterdir():
        path.unlink()
    return [[arg.decode() for arg in argv] for argv in found]


def _forge(repo: Path, task_id: str, **fields: str) -> None:
    def compute(snap: Snapshot) -> Change:
        task = snap.task(task_id)
        assert task is not None
        return Change(
            task_id=task_id,
            event="task.updated",
            subject=f"task {task_id}: forged",
            writes={task.path: task.with_fields(**fields).render().encode()},
        )

    commit_behind_engine(repo, compute)


def test_no_value_from_the_ref_reaches_ssh(
    cli: Cli, repo: Path, hub: Path, tmp_path: Path, ssh_server: SshServer, calls: Path
) -> None:
    other = make_other(tmp_path, hub)
    cli.ok(*other.add_args(ssh_server), cwd=repo)
    assert len(_recorded(calls)) == 1  # the probe of `host add`
    task_id = cli.ok("task", "create", "--no-spawn", "--json", "b1", "Work", cwd=repo).json()["id"]
    pwned = tmp_path / "pwned"
    env = [f"{key}={value}" for key, value in other.env.items()]

    # The new task nudges the host to sync: local values only (the project's name there).
    nudged = retry_until(lambda: _recorded(calls), 30, 0.1, "the nudge's ssh call")
    remote = ["env", *env, orange_bin(), "sync", "--project", "proj"]
    assert [argv[-3:] for argv in nudged] == [["--", "other", shlex.join(remote)]]

    # A host name from the ref that no registered host records itself as: one line,
    # no ssh at all (the registered host's own name and target are not keys either).
    for hostile in HOSTILE:
        value = hostile.format(p=pwned)
        _forge(repo, task_id, status="working", host=value, workspace="proj--1")
        for command in ("attach", "peek"):
            result = cli("task", command, task_id, cwd=repo)
            assert result.code == 1
            assert "which is not registered here" in result.err
        assert _recorded(calls) == []

    # The host it records itself as: ssh runs, with local values only and the id.
    _forge(repo, task_id, host="otherbox", tmux_session="$(touch x);", branch="-evil")
    cli("task", "peek", task_id, cwd=repo)
    remote = ["env", *env, orange_bin(), "task", "peek", task_id, "--project", "proj"]
    assert _recorded(calls) == [
        [
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=10",
            "-F",
            str(ssh_server.config),
            "-T",
            "--",
            "other",
            shlex.join([*remote, "--lines", "40"]),
        ]
    ]
    assert not pwned.exists()
