"""A stand-in for Claude Code as it behaves when Orange ends it (issue 30, the ledger).

``hangup_agent.py worker|reviewer PROMPT``, run in its tmux pane in a task's worktree.
Each model call it makes is recorded as Claude Code records one (a line in
``~/.claude/projects/<worktree>/<pid>.jsonl``, read by Orange's ``claude`` reader),
and counted in ``calls-<pid>`` in the home folder (what the model was paid for).

- worker: a call, ``## Plan``, ``working``; a call, a commit, ``## Handoff``,
  ``agent-review``; a call (its reply after the hand-over); then it idles.  On the
  hang-up of its session (a human's merge ends it) it makes one last call on its way
  out, then exits.
- reviewer: a call, ``## Review`` with ``Verdict: PASS``, then ``orange task update
  --status reviewing``, whose move ends its own window.  Like Claude Code, it does not
  die of the hang-up: it waits for its command, then asks the model once more (a
  call, and ``asked-again-<pid>`` in the home folder) and exits.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from orange.runtime.usage import claude_dir

ORANGE = (sys.executable, "-m", "orange")
OUTPUT = 1000  # output tokens of one call


def call(tag: str) -> None:
    """One model call, recorded as Claude Code records it, and counted."""
    folder = Path.home() / ".claude" / "projects" / claude_dir(os.getcwd())
    folder.mkdir(parents=True, exist_ok=True)
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"
    usage = {"input_tokens": 10, "output_tokens": OUTPUT, "cache_read_input_tokens": 5}
    message = {"id": f"msg_{os.getpid()}_{tag}", "model": "claude-sonnet-4-5", "usage": usage}
    line = {"type": "assistant", "cwd": os.getcwd(), "timestamp": stamp, "message": message}
    with (folder / f"{os.getpid()}.jsonl").open("a") as handle:
        handle.write(json.dumps(line) + "\n")
    with (Path.home() / f"calls-{os.getpid()}").open("a") as handle:
        handle.write(tag + "\n")


def append(text: str) -> None:
    with open("TASK.md", "a") as handle:
        handle.write(f"\n{text}\n")


def move(status: str) -> None:
    subprocess.run([*ORANGE, "task", "update", "--status", status], check=False)


def worker() -> None:
    def leave(signum: int, frame: FrameType | None) -> None:
        call("on-its-way-out")
        os._exit(0)

    signal.signal(signal.SIGHUP, leave)
    call("plan")
    append("## Plan\nAPPROACH: one file\nTOUCHING: feature.txt")
    move("working")
    call("work")
    Path("feature.txt").write_text("feature\n")
    subprocess.run(["git", "add", "feature.txt"], check=True)
    subprocess.run(["git", "commit", "-q", "-m", "Add feature"], check=True)
    append("## Handoff\nDONE: the feature\nUNCERTAIN: nothing")
    move("agent-review")
    call("after-its-hand-over")  # its reply to the move's result: the next record's
    while True:
        signal.pause()


def reviewer() -> None:
    for sig in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    call("review")
    append("## Review\nVerdict: PASS\n\nLooks good.")
    move("reviewing")
    call("after-its-verdict")
    (Path.home() / f"asked-again-{os.getpid()}").touch()


if __name__ == "__main__":
    worker() if sys.argv[1] == "worker" else reviewer()
