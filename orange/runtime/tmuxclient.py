"""The client side of the tmux adapter, for a program a person looks at (the dashboard):
show a task's session and come back, and put text in tmux's paste buffer.

Still one choke point (STYLE §4): every command goes through `Tmux`'s plumbing, but
two run tmux as a child: ``attach-session``, since it hands it the terminal until
detach, and ``load-buffer``, since it talks to the tmux the terminal is in (``$TMUX``),
which need not be the server of the agents.
"""

from __future__ import annotations

import os
import subprocess

from orange.errors import HookFailed
from orange.runtime.tmux import Tmux

# tmux's own default binding for `switch-client -l` (back to the last session).
RETURN_KEY = "prefix L"


class TmuxClient(Tmux):
    """A tmux server as seen from a terminal that may itself be inside tmux."""

    def socket_path(self) -> str:
        """The path of this server's socket ('' when no server runs)."""
        result = self._call("display-message", "-p", "#{socket_path}")
        return result.stdout[0].strip() if result.returncode == 0 and result.stdout else ""

    def is_current(self) -> bool:
        """Whether the terminal runs inside tmux on this very server (``$TMUX`` names
        its socket first)."""
        inside = os.environ.get("TMUX", "").split(",", 1)[0]
        return bool(inside) and os.path.realpath(inside) == os.path.realpath(self.socket_path())

    def switch_to(self, session: str, window: str) -> None:
        """Show ``session:window`` in the current client (inside tmux, same server)."""
        self._require(session, window)
        self._run("select-window", "-t", f"={session}:={window}")
        self._run("switch-client", "-t", f"={session}")

    def attach_and_wait(self, session: str, window: str) -> int:
        """Run ``tmux attach`` on this terminal (``TMUX`` unset, so from inside another
        server too) and return its exit status once the user detaches."""
        self._require(session, window)
        self._run("select-window", "-t", f"={session}:={window}")
        tmux = self._server.tmux_bin or "tmux"
        socket = ["-L", self.socket_name] if self.socket_name else []
        env = {key: value for key, value in os.environ.items() if key != "TMUX"}
        argv = [tmux, *socket, "attach-session", "-t", f"={session}"]
        return subprocess.run(argv, env=env, check=False).returncode

    def set_buffer(self, text: str) -> None:
        """Put ``text`` in the paste buffer of the tmux this terminal runs in (``$TMUX``
        names its socket: not always the server of the agents) and, with ``-w``, the
        terminal's clipboard: tmux drops an application's own OSC 52 by default."""
        if "\n" in text or not text:
            raise HookFailed("only one non-empty line goes to the tmux buffer")
        socket = os.environ.get("TMUX", "").split(",", 1)[0]
        if not socket:
            raise HookFailed("not inside tmux")
        tmux = self._server.tmux_bin or "tmux"
        result = subprocess.run(
            [tmux, "-S", socket, "load-buffer", "-w", "-"],
            input=text,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise HookFailed(f"tmux load-buffer failed: {' '.join(result.stderr.split())}")
