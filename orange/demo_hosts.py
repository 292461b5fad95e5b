"""``orange demo --hosts 2``: one task here and one on a second host, over real SSH.

The second host is a second Orange home and clone on this machine, reached only through
a private OpenSSH server this demo starts on 127.0.0.1 (a generated host key and user
key, an sshd_config of its own; this user logs in with the generated key) — so it needs
OpenSSH's ``sshd`` installed.  Both clones share a bare hub with Orange's server hook;
scripted agents (`orange.demo_agent`) plan, work and pass review on each host; both
tasks are merged here, the second host ending its copy once the merge tells it to sync.
Everything lives in a temporary directory and is stopped and removed at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml
from rich.console import Console

from orange import demo_sshd
from orange.githooks import shims as githooks
from orange.runtime.git import git

TIMEOUT = 120.0
HOST_B = "demo-b"


class DemoFailed(SystemExit):
    pass


def run_hosts_demo(server: demo_sshd.ServerCommand | None = None) -> None:
    """The demo, its SSH server OpenSSH's sshd unless ``server`` gives another's
    command line (the tests' stand-in where sshd is not installed)."""
    if server is None and not demo_sshd.SSHD.exists():
        raise SystemExit(
            "orange: the two-host demo needs OpenSSH's sshd (e.g. apt-get install "
            "openssh-server); `orange demo` runs on one host without it"
        )
    console = Console(highlight=False)
    root = Path(tempfile.mkdtemp(prefix="orange-demo-hosts-"))
    started = time.monotonic()
    env_a, env_b = _homes(root)
    here, there = root / "coffee", root / "coffee-b"
    with ThreadPoolExecutor(1) as pool:
        # The SSH server starts while the projects are set up.
        sshd = pool.submit(demo_sshd.start, root / "ssh", HOST_B, server)
        try:
            console.rule("[bold orange3]Orange demo: two hosts")
            _projects(root, here, there, env_a, env_b)
            _story(console, sshd.result(), here, env_a, env_b)
            console.print(f"\ndone in {time.monotonic() - started:.1f} s")
        finally:
            stopping = pool.submit(_stop, there, env_b)
            _stop(here, env_a)
            stopping.result()
            if sshd.exception() is None:
                sshd.result().stop()
            shutil.rmtree(root, ignore_errors=True)


def _story(
    console: Console,
    sshd: demo_sshd.SshServer,
    here: Path,
    env_a: dict[str, str],
    env_b: dict[str, str],
) -> None:
    add = ["host", "add", "b", HOST_B, "--ssh-config", str(sshd.config)]
    add += ["--orange", _orange_program()]
    add += [arg for key, value in env_b.items() for arg in ("--env", f"{key}={value}")]
    shown = [*add[:4], "--ssh-config", "…", "--env", "…"]
    console.print(f"$ orange {' '.join(shown)}", style="dim", markup=False)
    console.print(_ok(add, here, env_a).strip(), markup=False)
    create = ["task", "create", "--harness", "demo"]
    remote = [*create, "--host", "b", "fix-login", "Fix the login"]
    local = [*create, "dark-mode", "Add a dark mode"]
    with ThreadPoolExecutor(1) as pool:  # typed at once, as in two terminals
        there = pool.submit(_ok, remote, here, env_a)
        answers = [(remote, there.result()), (local, _ok(local, here, env_a))]
    for args, answer in answers:
        console.print(f"$ orange {' '.join(args)}", style="dim", markup=False)
        console.print(answer.strip(), markup=False)
    _until_reviewing(console, here, env_a)
    for task in _tasks(here, env_a):
        console.print(f"$ orange task merge {task['id']} --local", style="dim", markup=False)
        console.print(_ok(["task", "merge", task["id"], "--local"], here, env_a).strip())
    # The merge told host b to sync (`orange.hosts.nudge`): it ends its copy.
    _until(lambda: not _sessions(env_b), "host b to end its task after the merge")
    console.print("host b, told to sync, ended fix-login (no session left there)")
    console.rule("git log --oneline main (the merged work of both hosts)")
    console.print(git("log", "--oneline", "main", cwd=here).rstrip(), markup=False)


def _stop(clone: Path, env: dict[str, str]) -> None:
    """Stop a host's monitor and its tmux server."""
    _orange(["monitor", "stop"], clone, env)
    subprocess.run(
        ["tmux", "-L", env["ORANGE_TMUX_SOCKET"], "kill-server"], capture_output=True, check=False
    )


def _homes(root: Path) -> tuple[dict[str, str], dict[str, str]]:
    agent = [sys.executable, "-m", "orange.demo_agent"]
    config = {
        "harnesses": {
            "demo": {
                "command": [*agent, "--role", "worker", "{prompt}"],
                "review_command": [*agent, "--role", "reviewer", "--reviews", "PASS", "{prompt}"],
            }
        },
        "claim_timeout": 60,
    }
    identity = {
        "GIT_AUTHOR_NAME": "Orange Demo",
        "GIT_AUTHOR_EMAIL": "demo@orange.invalid",
        "GIT_COMMITTER_NAME": "Orange Demo",
        "GIT_COMMITTER_EMAIL": "demo@orange.invalid",
    }
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    envs = []
    for name, host in (("home-a", "demo-a"), ("home-b", HOST_B)):
        home = root / name
        home.mkdir()
        (home / "config.yml").write_text(yaml.safe_dump(config))
        envs.append(
            {
                "ORANGE_HOME": str(home),
                "ORANGE_HOST": host,
                "ORANGE_TMUX_SOCKET": f"orange-demo-{host}-{os.getpid()}",
                "ORANGE_MONITOR": "on",  # each host's monitor drives its agents
                "PATH": path,
                **identity,
            }
        )
    return envs[0], envs[1]


def _projects(
    root: Path, here: Path, there: Path, env_a: dict[str, str], env_b: dict[str, str]
) -> None:
    hub = root / "hub.git"
    git("init", "-q", "--bare", "-b", "main", str(hub), cwd=root)
    githooks.install_server_hook(hub)
    here.mkdir()
    git("init", "-q", "-b", "main", cwd=here)
    (here / "README.md").write_text("# coffee\n")
    git("add", "README.md", cwd=here)
    git("commit", "-q", "-m", "initial commit", cwd=here, env={**os.environ, **env_a})
    git("remote", "add", "origin", str(hub), cwd=here)
    git("push", "-q", "origin", "main", cwd=here)
    git("clone", "-q", str(hub), str(there), cwd=root)
    with ThreadPoolExecutor(1) as pool:  # each host registers its clone, at once
        b = pool.submit(
            _ok, ["project", "add", "--pool-size", "2", "--name", "coffee"], there, env_b
        )
        _ok(["project", "add", "--pool-size", "2"], here, env_a)
        _ok(["sync", "--setup"], here, env_a)
        b.result()


def _orange_program() -> str:
    found = Path(sys.executable).with_name("orange")
    return str(found) if found.exists() else "orange"


def _orange(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orange", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def _ok(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = _orange(args, cwd, env)
    if done.returncode != 0:
        raise DemoFailed(f"demo failed: orange {' '.join(args[:3])}: {done.stderr.strip()}")
    return done.stdout


def _tasks(cwd: Path, env: dict[str, str]) -> list[dict[str, str]]:
    listed = json.loads(_ok(["task", "list", "--json"], cwd, env))["tasks"]
    return sorted(listed, key=lambda t: t["created_at"])


def _until_reviewing(console: Console, here: Path, env: dict[str, str]) -> None:
    seen: dict[str, str] = {}

    def both() -> bool:
        _orange(["sync"], here, env)
        tasks = _tasks(here, env)
        for task in tasks:
            now = f"{task['branch']} on {task.get('host') or '?'}: {task['status']}"
            if seen.get(task["id"]) != now:
                seen[task["id"]] = now
                console.print(f"  {now}", markup=False)
        return len(tasks) == 2 and all(t["status"] == "reviewing" for t in tasks)

    # A look costs two orange processes: looked at less often, they leave the cores to
    # the agents.
    _until(both, "both tasks to reach review", every=2.0)


def _sessions(env: dict[str, str]) -> list[str]:
    listed = subprocess.run(
        ["tmux", "-L", env["ORANGE_TMUX_SOCKET"], "list-sessions", "-F", "#{session_name}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return listed.stdout.split()


def _until(check: Callable[[], object], what: str, every: float = 0.5) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        if time.monotonic() > deadline:
            raise DemoFailed(f"demo failed: timed out waiting for {what}")
        time.sleep(every)
