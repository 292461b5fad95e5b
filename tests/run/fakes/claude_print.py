"""`claude -p --output-format json` for `orange run` tests: the scripted agent's answer
(`agent.py`, same scenario) inside Claude Code's result object, with the usage Claude
Code 2.1.197 reported for one short turn against the scripted model server
(tests/fixtures/usage/claude/print.json: $0.02065, two model calls)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parents[1] / "fixtures" / "usage" / "claude" / "print.json"


def main() -> int:
    done = subprocess.run(
        [sys.executable, str(HERE / "agent.py"), sys.argv[-1]],
        capture_output=True,
        text=True,
        check=False,
    )
    sys.stderr.write(done.stderr)
    result = json.loads(SAMPLE.read_text())
    result.update(result=done.stdout, is_error=done.returncode != 0)
    print(json.dumps(result))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
