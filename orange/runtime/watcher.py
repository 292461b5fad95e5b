"""Starting, stopping and waking the monitor process (`orange.monitor`), from below it.

The spawn actions make sure a monitor watches the agents they start, and git hooks wake
it when git itself moves ``refs/orange/*``; neither imports the monitor's loop: they start
``python -m orange monitor`` in the background (one per host, held by a flock) and tell
tmux to run ``orange monitor --once`` the moment an agent pane dies.

A stopped monitor stays stopped.  `orange monitor stop` leaves a record (`stopped_at`)
that only `orange monitor start` removes: a person who stopped it expects Orange to act
on no agent on its own until they say so, whatever happens meanwhile (an agent exits,
they kill the tmux server, a git command moves ``refs/orange/*``, they open the
dashboard).  While it stands, `ensure_running` starts nothing, a loop exits at its next
look, and the pass tmux's hooks run only notes the dead agents in the monitor's log
(`orange.monitor.loop.note_dead`): nothing is written to a task, nothing respawned.  A
death is not lost by waiting: tmux keeps a dead pane (``remain-on-exit``), a gone
session stays gone, and the monitor's first pass after `orange monitor start` handles
them all by the workflows' exit rules.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orange.engine.caller import ROLE_VARIABLE, TASK_VARIABLE
from orange.errors import OrangeError
from orange.home import orange_home
from orange.store.lock import attempt

if TYPE_CHECKING:
    from orange.runtime.tmux import Tmux

HOOK_INDEX = 4711  # our slot in the global session-closed hook array


def state_dir() -> Path:
    path = orange_home() / "monitor"
    path.mkdir(parents=True, exist_ok=True)
    return path


def lock_path() -> Path:
    return state_dir() / "monitor.lock"


def status_path() -> Path:
    return state_dir() / "status.json"


def stopped_path() -> Path:
    return state_dir() / "stopped"


def stopped_at() -> str | None:
    """When `orange monitor stop` stopped the monitor, or None when it is not stopped."""
    try:
        return stopped_path().read_text().strip() or "?"
    except OSError:
        return None


def is_running() -> bool:
    with attempt(lock_path()) as got:
        return not got


def write_status(data: dict[str, Any]) -> None:
    path = status_path()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    tmp.replace(path)


def read_status() -> dict[str, Any]:
    try:
        data = json.loads(status_path().read_text())
    except (OSError, ValueError):
        data = {}
    data["running"] = is_running()
    data["stopped_at"] = stopped_at()
    return data if isinstance(data, dict) else {"running": data}


STOP_WAIT = 3.0  # seconds a stopped monitor has to exit before it is killed


def stop() -> bool:
    """Stop this host's monitor loop, and keep it stopped until `start`; return once the
    loop is gone (its lock free), so no pass of it runs after "monitor stopped" is said:
    killed outright when SIGTERM has not ended it within `STOP_WAIT` (a stopped or
    starved process).  False when none runs."""
    from orange.store.store import now_iso  # (only here: the hooks' start stays light)

    with contextlib.suppress(FileExistsError), stopped_path().open("x") as record:
        record.write(f"{now_iso()}\n")  # first: whatever starts now, stops (since the first)
    data = read_status()
    pid = data.get("pid")
    if not data.get("running") or not isinstance(pid, int):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    if _gone_within(STOP_WAIT):
        return True
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if _gone_within(STOP_WAIT):
        return True
    raise OrangeError(
        f"the monitor (pid {pid}) is still running after SIGTERM and SIGKILL",
        hint=f"look at it with `ps -o pid,stat,cmd -p {pid}`",
    )


def _gone_within(seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while is_running():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def start() -> str:
    """`orange monitor start`: end a stop and start the loop in the background; its
    first pass handles what died while it was stopped.  ``started``, ``running``
    (one already runs) or ``off`` (``ORANGE_MONITOR`` says so)."""
    stopped_path().unlink(missing_ok=True)
    if disabled():
        return "off"
    return "started" if ensure_running() else "running"


def disabled() -> bool:
    return os.environ.get("ORANGE_MONITOR", "").lower() in ("0", "off", "no")


def ensure_running() -> bool:
    """Start the monitor loop in the background unless one runs, it is disabled, or a
    person stopped it (`stop`: then a person's command says so); whether it started one."""
    if disabled():
        return False
    if stopped_at() is not None:
        _say_stopped()
        return False
    if is_running():
        return False
    logs = orange_home() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    # Often started by an agent's own command: the monitor is not that agent, and what
    # it starts must not inherit the agent's identity.
    env = {k: v for k, v in os.environ.items() if k not in (ROLE_VARIABLE, TASK_VARIABLE)}
    with open(logs / "monitor.log", "a") as out:
        subprocess.Popen(  # -P: never a package named orange in the folder it starts in
            [sys.executable, "-P", "-m", "orange", "monitor"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
        )
    _announce_once()
    return True


# What a stopped monitor means, said by `orange monitor stop|status|--once` and to a
# person who starts an agent meanwhile.
LEFT_ALONE = "agents that die are left alone (no task written, nothing respawned)"
STOPPED_SAID = f"orange: the monitor is stopped: {LEFT_ALONE} until `orange monitor start`"
_said: list[bool] = []  # said in this process already


def _say_stopped() -> None:
    """A person who starts an agent while the monitor is stopped hears it, once a
    command; an agent's own command (its move starting a reviewer) does not: it can
    do nothing about it."""
    if _said or os.environ.get(ROLE_VARIABLE):
        return
    _said.append(True)
    print(STOPPED_SAID, file=sys.stderr)


ANNOUNCEMENT = (
    "orange: started the background monitor, which restarts or escalates agents that die "
    "(see `orange monitor status`; stop it with `orange monitor stop` until `orange monitor "
    "start`; this is said once)"
)


def _announce_once() -> None:
    """The first start on this host is said on stderr, once: a process that outlives
    the command should not be a surprise."""
    marker = state_dir() / "announced"
    try:
        with open(marker, "x"):
            pass
    except OSError:
        return  # said before (or cannot be recorded: then say nothing rather than nag)
    print(ANNOUNCEMENT, file=sys.stderr)


def install_tmux_hooks(tmux: Tmux) -> None:
    """Make ``tmux`` run ``orange monitor --once`` the moment an agent dies.

    The pass covers every task rather than ``--task ID`` for the pane that died: it costs
    one tmux call whatever the number of tasks, and needs no pane-to-task map in tmux.

    Global hooks in our own slot of each hook array, so a user's hooks are kept.
    ``pane-died`` only fires for panes with ``remain-on-exit`` (our agents), so other
    panes on the server never start Orange.  The command lives in a small script so no
    path has to survive two levels of quoting (tmux's and the shell's).
    """
    script = state_dir() / "on-agent-exit.sh"
    env = {
        "ORANGE_HOME": str(orange_home()),
        "ORANGE_TMUX_SOCKET": os.environ.get("ORANGE_TMUX_SOCKET", ""),
        "PATH": os.environ.get("PATH", ""),
    }
    lines = ["#!/bin/sh", "# written by orange: react to an agent's exit at once"]
    lines += [f"export {key}={shlex.quote(value)}" for key, value in env.items()]
    # The monitor is no agent, whichever process started the tmux server (an agent may
    # run only an agent's commands: `orange.engine.caller.AGENT_COMMANDS`).
    lines.append(f"unset {ROLE_VARIABLE} {TASK_VARIABLE}")
    lines.append(f"exec {shlex.quote(sys.executable)} -P -m orange monitor --once >/dev/null 2>&1")
    text = "\n".join(lines) + "\n"
    if not script.exists() or script.read_text() != text:
        script.write_text(text)
        script.chmod(0o755)
    if '"' in str(script) or "#" in str(script):
        return  # cannot be quoted for tmux: the monitor loop's tick still notices deaths
    for hook in ("pane-died", "session-closed"):
        tmux.set_hook(f"{hook}[{HOOK_INDEX}]", f'run-shell -b "{script}"')
