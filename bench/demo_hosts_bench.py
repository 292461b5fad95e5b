"""The two-host demo's time (bench/README.md, "The two-host demo"): ``orange demo
--hosts 2`` run whole, each line of its transcript stamped with the seconds since the
start, so the phases show (set-up and SSH server, ``host add``, each create, the
agents' way to review, the merges, the host ending its copy); target: done in under a
minute.  Needs OpenSSH's sshd, as the demo does.

    .venv/bin/python bench/demo_hosts_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time


def run_once() -> float:
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "orange", "demo", "--hosts", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "100"},
    )
    assert process.stdout is not None
    for line in process.stdout:
        print(f"{time.monotonic() - started:6.1f}  {line.rstrip()}")
    if process.wait() != 0:
        raise SystemExit(f"the demo failed (exit {process.returncode})")
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1)
    runs = parser.parse_args().runs
    figures = []
    for _ in range(runs):
        before = os.getloadavg()[0]
        took = run_once()
        figures.append((took, before, os.getloadavg()[0]))
    for took, before, after in figures:
        print(f"two-host demo: {took:.1f} s (target < 60 s), load {before:.1f} -> {after:.1f}")


if __name__ == "__main__":
    main()
