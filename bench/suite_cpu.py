"""The CPU a command costs with everything it started, the processes that left it too.

    .venv/bin/python bench/suite_cpu.py .venv/bin/pytest -n 2 tests/e2e/test_budget.py

``/usr/bin/time`` counts only the processes its command waited for: a test's tmux
server daemonizes, and with it go the agents in its panes, the monitor, an SSH server,
so their CPU is lost.  Here the command runs under a child subreaper (Linux's
``PR_SET_CHILD_SUBREAPER``): whatever it leaves behind becomes this process's child,
is waited for when it ends, and is counted.  Prints user, system and wall time and the
load, so that a before and an after of a test change can be compared on a shared
machine (CPU, not wall time, says what the change saved).  Exits with the command's
exit code.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: suite_cpu.py COMMAND [ARGS...]", file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("suite_cpu.py: this system has no child subreaper (Linux only)", file=sys.stderr)
        return 2
    started = time.monotonic()
    child = os.fork()
    if child == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    code, ended = 1, started
    while True:  # the command, then whatever it left running, until none is left
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        if pid == child:
            code, ended = os.waitstatus_to_exitcode(status), time.monotonic()
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"CPU {used.ru_utime + used.ru_stime:.1f} s (user {used.ru_utime:.1f} s, system "
        f"{used.ru_stime:.1f} s), wall {ended - started:.1f} s, load "
        f"{os.getloadavg()[0]:.1f}, exit {code}",
        file=sys.stderr,
    )
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
