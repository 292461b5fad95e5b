"""A scripted architect and SWE for `orange run` tests: one prompt in argv, one answer
on stdout, like a harness's non-interactive mode.

It tells what it is asked from the prompt's wording (`orange.run.prompts`) and answers
from the scenario in ``$FAKE_RUN_DIR/scenario.json``; every call is appended to
``$FAKE_RUN_DIR/calls.jsonl`` (kind, subtask title, pid) before it answers, so a test
counts invocations.  Scenario keys (each optional):

- ``clarify``: answers in turn (the last repeats), each a JSON object;
- ``plan``: answers in turn, each a string printed as it is;
- ``edits``: title -> {path: text} written on each implementation (the iteration count
  is appended, so every iteration changes something);
- ``tests`` / ``review``: title -> list of booleans in turn (the last repeats; default
  true);
- ``fail``: titles whose implementation exits 1;
- ``block``: titles whose implementation waits until ``$FAKE_RUN_DIR/release`` exists,
  having written ``$FAKE_RUN_DIR/working-<title>`` (a test kills the runner meanwhile);
  stopped by SIGTERM meanwhile, it logs a ``stopped`` call with its pid first.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

FOLDER = Path(os.environ["FAKE_RUN_DIR"])


def kind_of(prompt: str) -> str:
    if "clear enough to plan" in prompt:
        return "clarify"
    if "Split the requirement" in prompt:
        return "plan"
    if "Run the project's tests" in prompt:
        return "tests"
    if "reviewing one subtask" in prompt:
        return "review"
    return "implement"


def title_of(prompt: str) -> str:
    for pattern in (r"# Your subtask: (.+)", r"# The subtask: (.+)", r'the subtask "(.+?)"'):
        found = re.search(pattern, prompt)
        if found:
            return found.group(1).strip()
    return ""


def record(kind: str, title: str) -> int:
    """Append this call; how many calls of this kind and title came before it."""
    with open(FOLDER / "calls.jsonl", "a+") as log:
        fcntl.flock(log, fcntl.LOCK_EX)
        log.seek(0)
        before = sum(1 for line in log if line.strip() and json.loads(line)[:2] == [kind, title])
        log.write(json.dumps([kind, title, os.getpid()]) + "\n")
    return before


def stopped(title: str) -> None:
    record("stopped", title)
    sys.exit(143)


def nth(values: list[object], n: int, default: object) -> object:
    if not values:
        return default
    return values[min(n, len(values) - 1)]


def main() -> int:
    prompt = sys.argv[-1]
    scenario = json.loads((FOLDER / "scenario.json").read_text())
    kind, title = kind_of(prompt), title_of(prompt)
    n = record(kind, title)
    if kind == "clarify":
        print(json.dumps(nth(scenario.get("clarify", []), n, {"status": "ready", "message": "ok"})))
    elif kind == "plan":
        print(nth(scenario.get("plan", []), n, ""))
    elif kind == "tests":
        passed = nth(scenario.get("tests", {}).get(title, []), n, True)
        print(
            json.dumps({"passed": passed, "output": f"run {n + 1}: {'ok' if passed else 'FAILED'}"})
        )
    elif kind == "review":
        approved = nth(scenario.get("review", {}).get(title, []), n, True)
        verdict = json.dumps({"approved": approved, "feedback": f"review {n + 1}"})
        print(f"Looked at it.\n```json\n{verdict}\n```")
    else:
        return implement(scenario, title, n, prompt)
    return 0


def implement(scenario: dict[str, Any], title: str, n: int, prompt: str) -> int:
    if title in scenario.get("block", []):
        signal.signal(signal.SIGTERM, lambda *_: stopped(title))
        (FOLDER / f"working-{title}").write_text(str(os.getpid()))
        while not (FOLDER / "release").exists():
            time.sleep(0.05)
    if title in scenario.get("fail", []):
        print("cannot do it", file=sys.stderr)
        return 1
    if "could not be merged" in prompt:  # resolve a conflict: take both sides' lines
        for path in Path(".").rglob("*.txt"):
            text = path.read_text()
            if "<<<<<<<" in text:
                kept = [
                    line
                    for line in text.splitlines()
                    if not line.startswith(("<<<<<<<", "=======", ">>>>>>>"))
                ]
                path.write_text("\n".join(kept) + "\n")
        print("resolved")
        return 0
    for path, text in scenario.get("edits", {}).get(title, {}).items():
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"{text}\n" + ("" if n == 0 else f"iteration {n + 1}\n"))
    print(f"did {title}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
