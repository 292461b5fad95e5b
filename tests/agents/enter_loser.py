"""``python enter_loser.py MARKER RECORD COMMAND...``: run COMMAND on a terminal of its
own and pass every byte between it and this terminal, but for the first carriage return
(Enter) typed after MARKER, which is dropped and noted by appending a line to RECORD.

A stand-in for what happens between tmux and an agent on a loaded machine: the Enter
pressed after a notice never reaches the agent as a submit (issue 25).  The terminal
size is passed on at start and on every SIGWINCH; the exit status is COMMAND's.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import sys
import termios
import tty


def main(marker: bytes, record: str, command: list[str]) -> int:
    def size() -> bytes:
        return fcntl.ioctl(0, termios.TIOCGWINSZ, b"\0" * 8)

    start = size()
    pid, agent = pty.fork()
    if pid == 0:  # the agent's side: its terminal of this size from its first look
        try:
            fcntl.ioctl(0, termios.TIOCSWINSZ, start)
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    signal.signal(signal.SIGWINCH, lambda *_: fcntl.ioctl(agent, termios.TIOCSWINSZ, size()))
    saved = termios.tcgetattr(0)
    tty.setraw(0)
    typed, dropped = b"", False
    try:
        while True:
            ready, _, _ = select.select([0, agent], [], [])
            if agent in ready:
                try:
                    out = os.read(agent, 65536)
                except OSError:  # EIO: the agent's side is closed, it has exited
                    break
                if not out:
                    break
                write(1, out)
            if 0 in ready:
                data = os.read(0, 65536)
                if not data:  # the pane is gone
                    break
                if not dropped:
                    typed += data  # a few kB at most: keystrokes and terminal replies
                    at = typed.find(marker)
                    cr = typed.find(b"\r", at + len(marker)) if at >= 0 else -1
                    if cr >= 0:
                        cut = cr - (len(typed) - len(data))  # the CR's place in data
                        data = data[:cut] + data[cut + 1 :]
                        dropped = True
                        with open(record, "a") as file:
                            file.write("dropped an Enter\n")
                write(agent, data)
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def write(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1].encode(), sys.argv[2], sys.argv[3:]))
