"""A scripted coding agent for ``orange demo`` and the end-to-end tests.

It plays the part a real agent (Claude Code, codex ...) plays: it runs in its tmux
pane with the prompt as its one argument, reads and writes the TASK.md working copy
in its worktree, commits code, and calls ``orange task update --status ...``.  As a
persistent worker it waits for notifications on stdin (typed by ``notify_worker``).

Every prompt it receives is saved under ``$ORANGE_HOME/agent-log/`` so tests can check
it arrived byte for byte.

Options: ``--role worker|reviewer``; ``--reviews FAIL,PASS`` (the verdict of each
review round; ``FAIL,FAIL/PASS``: one list per review cycle, a cycle started by a
human's request for changes); ``--handoff-to STATUS`` (where the worker moves with its
handoff: ``agent-review``, or ``reviewing`` in a workflow without agent review);
``--die STEP`` to exit early for exit-monitoring tests: ``start``
(exit 3 at once), ``after-plan`` (write the plan, exit without moving),
``after-handoff`` (write the handoff, exit without moving), ``after-review`` (write
the review, exit without moving), ``before-review`` (exit without a verdict);
``--plan-by human`` leaves the plan to a person: the worker waits in ``planning``
until someone writes ``## Plan`` and moves the task to ``working`` (the README tour
does), then carries on as usual.  ``--edit FILE``: the worker's work goes into FILE
(default one note file per branch), so two workers can edit the same file;
``--hold``: after committing its first work it waits for a line on stdin before its
handoff; ``--spend TOKENS``: a runaway agent that records a model call of TOKENS output
tokens in Claude Code's session format every second and never moves (the budget's test).
Sent back to bring its branch up to date with a branch (``orange task
rebase``: "up to date with BRANCH:" in ``## Feedback``), it merges that branch first,
keeping both sides' lines where they conflict.

It is also the built-in harness ``demo`` (`orange.runtime.harness`), a stand-in for
trying Orange without a coding agent: no model, no real edits; its work is one note
file per task branch, committed there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orange.engine.gates import section, set_section, verdict

COPY = "ORANGE-TASK.md" if Path("ORANGE-TASK.md").exists() else "TASK.md"


# Orange as this Python runs it: an agent's pane need not have `orange` on its PATH.
ORANGE = (sys.executable, "-P", "-m", "orange")  # -P: never the worktree's own orange/
# How often a worker that leaves the plan to a person looks whether it has moved on.
POLL = 1.0


def orange(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ORANGE, *args], capture_output=True, text=True, check=False)


def show() -> dict[str, object]:
    result = orange("task", "show", os.environ["ORANGE_TASK_ID"], "--json")
    data = json.loads(result.stdout) if result.stdout.strip() else {}
    return data if isinstance(data, dict) else {}


def move(status: str) -> None:
    result = orange("task", "update", "--status", status)
    print(result.stdout.strip() or result.stderr.strip(), flush=True)


def write_section(heading: str, content: str) -> None:
    path = Path(COPY)
    text = path.read_text()
    head, sep, body = _split(text)
    path.write_text(head + sep + set_section(body, heading, content))


def read_body() -> str:
    return _split(Path(COPY).read_text())[2]


def _split(text: str) -> tuple[str, str, str]:
    lines = text.splitlines(keepends=True)
    fences = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == "---"]
    if len(fences) >= 2 and fences[0] == 0:
        cut = fences[1] + 1
        return "".join(lines[:cut]), "", "".join(lines[cut:])
    return "", "", text


def git(*args: str) -> None:
    subprocess.run(["git", *args], capture_output=True, text=True, check=True)


def log_prompt(role: str, prompt: str) -> None:
    home = Path(os.environ.get("ORANGE_HOME", "."))
    folder = home / "agent-log"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = f"{time.time():.6f}"
    (folder / f"{os.environ.get('ORANGE_TASK_ID', 'x')}-{role}-{stamp}.txt").write_text(prompt)


def wait_for_notification() -> bool:
    print("waiting for a notification ...", flush=True)
    line = sys.stdin.readline()
    print(f"notified: {line.strip()[:80]}", flush=True)
    return bool(line)


def catch_up(body: str) -> None:
    """Merge the branch the newest feedback asks to be up to date with, if it asks,
    resolving each conflict by keeping both sides' lines (as a person would here)."""
    asked = re.findall(r"up to date with (\S+?):", section(body, "## Feedback") or "")
    if not asked:
        return
    merging = subprocess.run(["git", "merge", "--no-edit", f"refs/heads/{asked[-1]}"],
                             capture_output=True, check=False)  # fmt: skip
    if merging.returncode == 0:
        return
    listed = subprocess.run(["git", "diff", "--name-only", "--diff-filter=U"],
                            capture_output=True, text=True, check=True)  # fmt: skip
    for name in listed.stdout.split():
        with tempfile.TemporaryDirectory() as tmp:
            sides = []
            for stage in (2, 1, 3):  # ours, base, theirs
                shown = subprocess.run(["git", "show", f":{stage}:{name}"],
                                       capture_output=True, check=False)  # fmt: skip
                sides.append(Path(tmp, str(stage)))
                sides[-1].write_bytes(shown.stdout)
            union = subprocess.run(["git", "merge-file", "-p", "--union", *map(str, sides)],
                                   capture_output=True, check=False)  # fmt: skip
        Path(name).write_bytes(union.stdout)
        git("add", name)
    git("commit", "--no-edit", "-q")


def worker(
    die: str | None,
    handoff_to: str = "agent-review",
    plan_by: str = "agent",
    edit: str | None = None,
    hold: bool = False,
) -> int:
    waiting = False
    while True:
        task = show()
        status = str(task.get("status", ""))
        branch = str(task.get("branch", "work"))
        rounds = int(str(task.get("review_round") or 0))
        cycle = int(str(task.get("review_cycle") or 0))
        if status == "planning" and plan_by == "human":
            if not waiting:
                print("waiting for a person to write ## Plan and move to working ...", flush=True)
                waiting = True
            time.sleep(POLL)
        elif status == "planning":
            write_section(
                "## Plan", "APPROACH: write the feature in small steps\nTOUCHING: feature.txt"
            )
            if die == "after-plan":
                return 0
            move("working")
        elif status == "working":
            body = read_body()
            fixing = verdict(body) == "FAIL" or section(body, "## Feedback") is not None
            if fixing:
                catch_up(body)
            name = edit or "feature-" + branch.replace("/", "-") + ".txt"
            with open(name, "a") as handle:
                handle.write(
                    f"{'fix' if fixing else 'feature'} for round {rounds + 1} ({branch})\n"
                )
            git("add", name)
            git("commit", "-q", "-m", f"{'Fix review findings' if fixing else 'Add feature'}")
            if hold and not fixing and not wait_for_notification():
                return 0
            # Named by cycle and round: each handover is a new artifact, also after a
            # human's send-back restarts the rounds.
            at = f"cycle {cycle + 1}, round {rounds + 1}" if cycle else f"round {rounds + 1}"
            write_section(
                "## Handoff",
                f"DONE: {'fixed the review findings' if fixing else 'the feature'}"
                f" ({at})\nUNCERTAIN: nothing",
            )
            if die == "after-handoff":
                return 0
            move(handoff_to)
            if not wait_for_notification():
                return 0
        elif status in ("done", "cancelled", "") or not wait_for_notification():
            return 0


def spend_forever(tokens: int) -> int:
    """A runaway agent: every `POLL` seconds one model call of ``tokens`` output tokens,
    recorded as Claude Code records it (a session file under
    ``~/.claude/projects/<this directory>/``, `orange.runtime.usage`), and no move."""
    from orange.runtime.usage import claude_dir

    cwd = os.getcwd()
    folder = Path.home() / ".claude" / "projects" / claude_dir(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"demo-{os.getpid()}.jsonl"
    call = 0
    while True:
        call += 1
        now = time.time()  # the real time of the call, to the millisecond, as Claude Code's
        stamp = (
            time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"
        )
        usage = {"input_tokens": 10, "output_tokens": tokens, "cache_read_input_tokens": 0}
        message = {"id": f"msg_{os.getpid()}_{call}", "model": "claude-sonnet-4-5", "usage": usage}
        line = {"type": "assistant", "cwd": cwd, "timestamp": stamp, "message": message}
        with path.open("a") as handle:
            handle.write(json.dumps(line) + "\n")
        time.sleep(POLL)


def reviewer(cycles: list[list[str]], die: str | None) -> int:
    task = show()
    rounds = int(str(task.get("review_round") or 1))
    cycle = int(str(task.get("review_cycle") or 0))
    reviews = cycles[cycle] if cycle < len(cycles) else []
    wanted = reviews[rounds - 1] if rounds - 1 < len(reviews) else "PASS"
    if die == "before-review":
        return 2
    feedback = "Looks good." if wanted == "PASS" else "The feature needs a test for the edge case."
    write_section("## Review", f"Verdict: {wanted}\n\n{feedback}")
    if die == "after-review":
        return 0
    if wanted == "PASS":
        move("reviewing")
    else:
        move("working" if rounds < 2 else "stuck")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="orange-demo-agent")
    parser.add_argument("--role", choices=["worker", "reviewer"], default="worker")
    parser.add_argument("--reviews", default="PASS")
    parser.add_argument("--handoff-to", default="agent-review")
    parser.add_argument("--die", default=None)
    parser.add_argument("--plan-by", choices=["agent", "human"], default="agent")
    parser.add_argument("--edit", default=None)
    parser.add_argument("--hold", action="store_true")
    parser.add_argument("--spend", type=int, default=0)
    parser.add_argument("prompt")
    args = parser.parse_args(argv)
    log_prompt(args.role, args.prompt)
    print(f"demo {args.role} agent for task {os.environ.get('ORANGE_TASK_ID')}", flush=True)
    if args.die == "start":
        return 3
    if args.spend:
        return spend_forever(args.spend)
    if args.role == "reviewer":
        cycles = [[r.strip().upper() for r in c.split(",")] for c in args.reviews.split("/")]
        return reviewer(cycles, args.die)
    return worker(args.die, args.handoff_to, args.plan_by, args.edit, args.hold)


if __name__ == "__main__":
    sys.exit(main())
