"""The tests' SSH server where OpenSSH's sshd is not installed (`tests.ssh`): asyncssh
on 127.0.0.1, public-key authentication against one authorized_keys file, each
command run with ``/bin/sh -c`` in this process's environment, as sshd runs it with
the user's shell.  A session that asks for a terminal (``ssh -t``) gets a
pseudo-terminal of its own, so ``tmux attach`` works through it.

``python tests/asyncssh_server.py PORT HOST_KEY AUTHORIZED_KEYS``
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import struct
import sys
import termios
from typing import Any

import asyncssh


async def _plain(process: Any, command: str) -> int:
    child = await asyncio.create_subprocess_exec(
        "/bin/sh",
        "-c",
        command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    await process.redirect(stdin=child.stdin, stdout=child.stdout, stderr=child.stderr)
    return await child.wait()


async def _terminal(process: Any, command: str) -> int:
    leader, follower = pty.openpty()
    cols, rows, _, _ = process.get_terminal_size()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows or 24, cols or 80, 0, 0))
    env = {**os.environ, "TERM": process.get_terminal_type() or "xterm"}
    child = await asyncio.create_subprocess_exec(
        "/bin/sh",
        "-c",
        command,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
        start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
    )
    os.close(follower)
    reader = os.fdopen(leader, "rb", buffering=0)
    writer = os.fdopen(os.dup(leader), "wb", buffering=0)
    await process.redirect(stdin=writer, stdout=reader, send_eof=False)
    return await child.wait()


async def _handle(process: Any) -> None:
    command = process.command or "exec /bin/sh"
    try:
        if process.get_terminal_type():
            code = await _terminal(process, command)
        else:
            code = await _plain(process, command)
    except Exception as exc:  # report, never hang the client
        process.stderr.write(f"asyncssh test server: {exc}\n".encode())
        code = 1
    await asyncio.sleep(0.05)  # let the last output drain to the client
    process.exit(code)


async def main(port: int, host_key: str, authorized: str) -> None:
    await asyncssh.create_server(
        asyncssh.SSHServer,
        "127.0.0.1",
        port,
        server_host_keys=[host_key],
        authorized_client_keys=authorized,
        process_factory=_handle,
        encoding=None,
    )
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3]))
