"""The one tmux adapter (STYLE §4): every tmux command Orange runs goes through here.

All commands go through libtmux (`Server.cmd`), one tmux client call each; ``attach``
alone execs tmux, since it hands the terminal over.

Agents run as the pane's own process, never under a shell.  Their argv (a long prompt
with newlines, quotes, ``$(...)``, a trailing ``;`` ...) never passes through a shell
or through tmux's own argument parsing either (tmux reads an argument ending in ``;``
as a command separator): `Tmux.start` writes argv, env and cwd to a private JSON file
under ``$ORANGE_HOME/run/`` and has tmux run ``python -P -m orange.runtime.launcher FILE``,
which execs the agent (see `orange.runtime.launcher`).

``remain-on-exit`` is set on the agent's window in the same tmux command that creates
it (``new-window ... ; set-option -w ...``): the server runs both before it handles the
child's exit, so an agent that exits at once still leaves a dead pane with its status.

Session and window names are matched exactly (``=name``), never as prefixes or
patterns.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import termios
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from orange.errors import HookFailed
from orange.runtime.runfiles import private_file, write_spec

if TYPE_CHECKING:
    from libtmux.common import tmux_cmd
    from libtmux.server import Server

SOCKET_ENV = "ORANGE_TMUX_SOCKET"

# Between typing a message and pressing Enter, the pane is read until the agent has
# shown the message: agent TUIs (Claude Code, codex: Ink/React) treat an Enter that
# arrives in the same burst as the text, or inside a bracketed paste they are still
# digesting, as part of the input instead of a submit (tmux/tmux#1778;
# Soul-Brews-Studio/maw-js#16; andyrewlee/amux#171).  A fixed pause (0.5 s) was too
# short for codex on a loaded machine (issue 25): Enter goes once the pane shows the
# end of the message and has held still for SUBMIT_STILL seconds (SUBMIT_SETTLE if the
# agent shows the message some other way, a "[Pasted ...]" placeholder), or after
# SUBMIT_WAIT seconds in any case (an agent that never redraws, or one whose spinner
# never holds still, still gets its Enter).
#
# An agent starved of CPU looks still too, and codex reads an Enter that comes within
# ~120 ms of a burst of typed text as a newline: so the submit is checked.  After
# Enter, once the pane has changed and held still (or SUBMIT_WAIT), a message whose end
# still stands where it stood, followed by the same screen as before Enter, is still in
# the input box: Enter again, SUBMIT_TRIES presses in all, then the hook fails (the
# task gets attention: no agent waits unseen on a notice it never received).
SUBMIT_WAIT = 5.0
SUBMIT_STILL = 0.2
SUBMIT_SETTLE = 1.0
SUBMIT_TRIES = 3
_TAIL = 40  # characters of the message's end (whitespace aside) looked for in the pane
_POLL = 0.05

# Panes read in one tmux call (`Tmux.visible_all`): tmux refuses a command line longer
# than its message size (16 KB: "command too long"), some 200 captures with their marks.
READ_AT_ONCE = 100
_SEP = "\x1f"  # list-panes field separator: cannot occur in Orange's names
_FIELDS = (
    "pane_id",
    "pane_dead",
    "pane_dead_status",
    "pane_dead_signal",
    "pane_pid",
    "window_activity",  # when the window last had output (seconds since the epoch)
    "window_name",
    "session_name",  # last: a foreign session's name may hold anything but a newline
)
_UNSAFE = re.compile(r"[^A-Za-z0-9/_-]")
_NAME = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9/_-]*")
# list-panes errors that mean "no panes": no server, or one without sessions (exiting).
_NO_SERVER = (
    "no server running",
    "error connecting to",
    "server exited unexpectedly",
    "no current target",
    "no sessions",
)


class PaneInfo(NamedTuple):  # not a dataclass: see `orange.engine.workflow`
    """One pane as `list-panes` saw it.  ``dead_status`` is set once tmux has reaped the
    process and it exited normally; ``dead_signal`` when a signal killed it.
    ``activity``: when the pane's window (one agent each) last printed anything, in
    seconds since the epoch (tmux's ``window_activity``)."""

    session: str
    window: str
    pane_id: str
    dead: bool
    dead_status: int | None
    dead_signal: int | None
    pid: int | None
    activity: int | None = None


def _int(text: str) -> int | None:
    return int(text) if text.strip().lstrip("-").isdigit() else None


class Tmux:
    """A tmux server: the socket named here, else ``$ORANGE_TMUX_SOCKET`` as it is at
    each call, else the user's default server.  One adapter serves a whole process (the
    composition root builds it, `orange.compose.tmux`)."""

    def __init__(self, socket_name: str | None = None, *, submit_wait: float = SUBMIT_WAIT):
        self._socket_name = socket_name or None
        self.submit_wait = submit_wait
        self._libtmux_server: Server | None = None

    @property
    def socket_name(self) -> str | None:
        return self._socket_name or os.environ.get(SOCKET_ENV) or None

    @property
    def _server(self) -> Server:
        socket = self.socket_name
        if self._libtmux_server is None or self._libtmux_server.socket_name != socket:
            # libtmux costs more to import than an agent's whole `task update`: only a
            # command that really talks to tmux loads it.
            from libtmux.server import Server

            self._libtmux_server = Server(socket_name=socket)
        return self._libtmux_server

    # -- names -----------------------------------------------------------------------

    @staticmethod
    def session_name(project: str, branch: str) -> str:
        """``<project>/<branch>`` made safe for tmux.

        tmux forbids ``.`` and ``:`` in session names; anything outside
        ``[A-Za-z0-9/_-]`` becomes ``-`` as well, and a leading ``-`` (which tmux would
        read as an option) becomes ``_``.  Distinct names can collide (``a.b`` and
        ``a-b``); branch names are unique per project in practice.
        """
        name = _UNSAFE.sub("-", f"{project}/{branch}")
        if name.startswith("-"):
            name = "_" + name.lstrip("-")
        return name or "_"

    # -- queries ---------------------------------------------------------------------

    def has_session(self, name: str) -> bool:
        _check_name(name, "session")
        return self._call("has-session", "-t", f"={name}").returncode == 0

    def panes(self) -> list[PaneInfo]:
        """Every pane of the server, in one tmux call; [] when no server is running.

        tmux 3.3 sometimes misses the SIGCHLD of a process that exits right after it
        started: the process stays a zombie and its pane shows dead without a status.
        Only then, the server is sent a SIGCHLD (it reaps every exited child on one,
        and does nothing else) and the panes are listed again.
        """
        found = self._list_panes()
        if any(p.dead and p.dead_status is None and p.dead_signal is None for p in found):
            self._reap_children()
            found = self._list_panes()
        return found

    def _list_panes(self) -> list[PaneInfo]:
        fmt = _SEP.join(f"#{{{field}}}" for field in _FIELDS)
        result = self._call("list-panes", "-a", "-F", fmt)
        if result.returncode != 0:
            if _no_server(result.stderr):
                return []
            raise HookFailed(f"tmux list-panes failed: {_err(result.stderr)}")
        found = []
        for line in result.stdout:
            parts = line.split(_SEP, len(_FIELDS) - 1)
            if len(parts) != len(_FIELDS):
                continue
            pane_id, dead, status, signal, pid, activity, window, session = parts
            found.append(
                PaneInfo(
                    session=session,
                    window=window,
                    pane_id=pane_id,
                    dead=dead == "1",
                    dead_status=_int(status),
                    dead_signal=_int(signal),
                    pid=_int(pid),
                    activity=_int(activity),
                )
            )
        return found

    def pane(self, session: str, window: str) -> PaneInfo | None:
        """The (first) pane of that window, or None."""
        for info in self.panes():
            if info.session == session and info.window == window:
                return info
        return None

    def capture(self, session: str, window: str, lines: int) -> str:
        """The last ``lines`` lines the pane shows (a dead pane keeps its last output)."""
        pane = self._require(session, window)
        result = self._run("capture-pane", "-p", "-J", "-t", pane.pane_id, "-S", f"-{lines}")
        return "\n".join(result[-lines:]) if lines > 0 else ""

    def visible(self, pane_id: str, history: int = 0) -> str:
        """What pane ``pane_id`` (``%N``) shows now, its visible lines and the last
        ``history`` lines scrolled off above them, wrapped lines joined; "" when the
        pane is gone."""
        since = ["-S", f"-{history}"] if history > 0 else []
        result = self._call("capture-pane", "-p", "-J", "-t", pane_id, *since)
        return "\n".join(result.stdout) if result.returncode == 0 else ""

    def visible_all(self, pane_ids: Sequence[str]) -> dict[str, str]:
        """What each pane of ``pane_ids`` shows now (as `visible`), `READ_AT_ONCE` panes a
        tmux call: each capture is followed by a line of the call's own random mark,
        which no pane can show.  A pane gone meanwhile ends tmux's command list there:
        it and the panes after it are read one by one."""
        shown: dict[str, str] = {}
        for start in range(0, len(pane_ids), READ_AT_ONCE):
            shown.update(self._visible_together(pane_ids[start : start + READ_AT_ONCE]))
        return shown

    def _visible_together(self, pane_ids: Sequence[str]) -> dict[str, str]:
        mark = f"orange-{os.urandom(12).hex()}"
        args: list[str] = []
        for pane_id in pane_ids:
            args += [";", "capture-pane", "-p", "-J", "-t", pane_id, ";", "display-message"]
            args += ["-p", mark]
        shown: dict[str, str] = {}
        lines: list[str] = []
        for line in self._call(*args[1:]).stdout:
            if line != mark or len(shown) == len(pane_ids):
                lines.append(line)
                continue
            while lines and not lines[-1]:
                lines.pop()
            shown[pane_ids[len(shown)]] = "\n".join(lines)
            lines = []
        for pane_id in pane_ids[len(shown) :]:
            shown[pane_id] = self.visible(pane_id)
        return shown

    # -- agents ----------------------------------------------------------------------

    def start(
        self,
        session: str,
        window: str,
        argv: Sequence[str],
        cwd: Path | str,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """Run ``argv`` in ``cwd`` as the process of window ``session:window``.

        Creates the session (detached) or the window as needed; respawns the window when
        its pane is dead; refuses when its agent is still running.  ``env`` is added to
        the tmux server's environment for that process.
        """
        _check_name(session, "session")
        _check_name(window, "window")
        if not argv or not all(isinstance(arg, str) for arg in argv):
            raise HookFailed("no command to start: argv must be a non-empty list of strings")
        if not Path(cwd).is_dir():
            raise HookFailed(f"cannot start {argv[0]} in {cwd}: no such directory")
        pane = self.pane(session, window)
        if pane is not None and not pane.dead:
            raise HookFailed(
                f'tmux window "{session}:{window}" is still running (pid {pane.pid})',
                hint="kill it first, or wait until it exits",
            )
        spec = write_spec(argv, cwd, env or {})
        launch = [sys.executable, "-P", "-m", "orange.runtime.launcher", str(spec)]
        try:
            if pane is not None:
                # remain-on-exit is already on for this window.
                self._run("respawn-pane", "-k", "-t", pane.pane_id, "-c", str(cwd), *launch)
            elif not self._new_session(session, window, str(cwd), launch):
                self._run(
                    "new-window", "-d", "-t", f"={session}:", "-n", window, "-c", str(cwd),
                    *launch, ";", *_keep_dead(session, window),
                )  # fmt: skip
        except BaseException:
            spec.unlink(missing_ok=True)
            raise

    def _new_session(self, session: str, window: str, cwd: str, launch: list[str]) -> bool:
        """Create ``session`` running ``launch`` in ``window``; False when it exists."""
        if self.has_session(session):
            return False
        # On a server of Orange's own (ORANGE_TMUX_SOCKET), the server outlives its last
        # session, so the session-closed hook still runs and the monitor keeps one server
        # to watch.  The user's default server keeps its own exit-empty setting.
        stay = [";", "set-option", "-s", "exit-empty", "off"] if self.socket_name else []
        try:
            self._run(
                "new-session", "-d", "-s", session, "-n", window, "-c", cwd,
                *launch, ";", *_keep_dead(session, window), *stay,
            )  # fmt: skip
        except HookFailed as error:
            if "duplicate session" not in error.message:
                raise
            return False  # created meanwhile by someone else: add the window to it
        return True

    def send_text(self, session: str, window: str, text: str) -> None:
        """Type ``text`` into the pane, then press Enter.

        A single line is typed literally (``send-keys -l``).  Text with newlines is
        pasted as one block (``load-buffer`` + ``paste-buffer -p``): an agent that asked
        for bracketed paste receives one message with its newlines intact, where typing
        each line would submit the message at its first newline.  Trailing newlines are
        dropped (Enter follows anyway).
        """
        pane = self._require(session, window)
        if pane.dead:
            raise HookFailed(f'tmux window "{session}:{window}" is not running')
        text = text.replace("\r\n", "\n").rstrip("\n")
        before = self.visible(pane.pane_id)
        if "\n" in text:
            self._paste(pane.pane_id, text)
        elif text:
            self._run("send-keys", "-t", pane.pane_id, "-l", "--", _literal(text))
        if not text:
            self._run("send-keys", "-t", pane.pane_id, "Enter")
            return
        tail = _squeezed(text)[-_TAIL:]
        typed = self._settle(pane.pane_id, before, tail)
        if self._reads_lines(pane.pane_id):  # the terminal hands it the line on Enter
            self._run("send-keys", "-t", pane.pane_id, "Enter")
            return
        for _ in range(SUBMIT_TRIES):
            self._run("send-keys", "-t", pane.pane_id, "Enter")
            if not _still_typed(typed, self._settle(pane.pane_id, typed), tail):
                return
        raise HookFailed(
            f'the text typed into tmux window "{session}:{window}" was not submitted: '
            f"it still stands in the agent's input box after {SUBMIT_TRIES} presses of "
            "Enter (attach and press Enter)"
        )

    def _reads_lines(self, pane_id: str) -> bool:
        """Whether the pane's program reads whole lines (its terminal in canonical
        mode: Enter completes the line, nothing to check), not keys as agent TUIs do.
        True when the terminal cannot be asked (then Enter is pressed once, unchecked)."""
        result = self._call("display-message", "-p", "-t", pane_id, "#{pane_tty}")
        tty = result.stdout[0] if result.returncode == 0 and result.stdout else ""
        try:
            fd = os.open(tty, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError:
            return True
        try:
            return bool(termios.tcgetattr(fd)[3] & termios.ICANON)
        except termios.error:
            return True
        finally:
            os.close(fd)

    def _settle(self, pane_id: str, before: str, tail: str = "") -> str:
        """What the pane shows once it differs from ``before`` and has held still for
        `SUBMIT_STILL` seconds with ``tail`` shown once more than before (`SUBMIT_SETTLE`
        seconds without it), or whatever it shows after `submit_wait` seconds."""
        deadline = time.monotonic() + self.submit_wait
        more = _squeezed(before).count(tail) + 1 if tail else 0
        last, still_since = before, None
        while time.monotonic() < deadline:
            time.sleep(_POLL)
            now = self.visible(pane_id)
            if now != last:
                last, still_since = now, time.monotonic()
                continue
            if still_since is None:
                continue
            shown = not tail or _squeezed(now).count(tail) >= more
            if time.monotonic() - still_since >= (SUBMIT_STILL if shown else SUBMIT_SETTLE):
                return now
        return last

    # -- sessions and windows --------------------------------------------------------

    def kill_session(self, name: str) -> None:
        """Kill the session; nothing when it is absent."""
        if self.has_session(name):
            self._call("kill-session", "-t", f"={name}")

    def kill_window(self, session: str, window: str) -> None:
        """Kill that window (its session's other windows stay); nothing when absent."""
        _check_name(window, "window")
        for pane in self.panes():
            if pane.session == session and pane.window == window:
                self._call("kill-window", "-t", f"={session}:={window}")
                return

    def set_aside(self, session: str, window: str | None = None) -> str | None:
        """Rename the session (or its window) to a name no task uses and return that
        name (None: absent), freeing the old name for a new one while it lives on."""
        old = session if window is None else window
        if not self.has_session(session) or (window and not self.pane(session, window)):
            return None
        aside = f"{old}--ending-{os.urandom(4).hex()}"
        target = f"={session}" if window is None else f"={session}:={window}"
        self._run("rename-session" if window is None else "rename-window", "-t", target, aside)
        return aside

    def rename_session(self, old: str, new: str) -> None:
        _check_name(new, "session")
        if not self.has_session(old):
            raise HookFailed(f'no tmux session "{old}" to rename')
        self._run("rename-session", "-t", f"={old}", new)

    def attach(self, session: str) -> None:
        """Show the session: ``switch-client`` inside tmux, else exec ``tmux attach``."""
        if not self.has_session(session):
            raise HookFailed(f'no tmux session "{session}"')
        if os.environ.get("TMUX"):
            self._run("switch-client", "-t", f"={session}")
            return
        tmux = self._server.tmux_bin or "tmux"
        socket = ["-L", self.socket_name] if self.socket_name else []
        os.execvp(tmux, [tmux, *socket, "attach-session", "-t", f"={session}"])

    # -- server ----------------------------------------------------------------------

    def set_hook(self, name: str, command: str) -> None:
        """Set a global tmux hook (``pane-died``, ``session-closed`` ...).  ``command`` is
        a tmux command string: tmux parses it, so it must never carry untrusted text."""
        self._run("set-hook", "-g", name, command)

    def unset_hook(self, name: str) -> None:
        self._run("set-hook", "-gu", name)

    def kill_server(self) -> None:
        """Stop the server and every session on it; nothing when none is running."""
        self._call("kill-server")

    # -- plumbing --------------------------------------------------------------------

    def _reap_children(self) -> None:
        result = self._call("display-message", "-p", "#{pid}")
        pid = _int(result.stdout[0]) if result.returncode == 0 and result.stdout else None
        if pid:
            try:
                os.kill(pid, signal.SIGCHLD)
            except OSError:
                pass  # not ours to signal, or gone: the next listing will tell

    def _call(self, *args: str) -> tmux_cmd:
        server = self._server
        from libtmux import exc as tmux_exc  # loaded by the line above: free here

        try:
            return server.cmd(*args)
        except tmux_exc.TmuxCommandNotFound:
            raise HookFailed("tmux is not installed", hint="install tmux 3.0 or newer") from None

    def _run(self, *args: str) -> list[str]:
        """Run a tmux command; HookFailed (one line) when it fails.  Returns stdout lines."""
        result = self._call(*args)
        if result.returncode != 0:
            raise HookFailed(f"tmux {args[0]} failed: {_err(result.stderr)}")
        return list(result.stdout)

    def _require(self, session: str, window: str) -> PaneInfo:
        pane = self.pane(session, window)
        if pane is None:
            raise HookFailed(f'no tmux window "{session}:{window}"')
        return pane

    def _paste(self, pane_id: str, text: str) -> None:
        buffer = f"orange-{os.urandom(6).hex()}"
        path = private_file("paste", ".txt", text)
        try:
            self._run(
                "load-buffer", "-b", buffer, str(path), ";",
                "paste-buffer", "-d", "-p", "-b", buffer, "-t", pane_id,
            )  # fmt: skip
        finally:
            path.unlink(missing_ok=True)


def _squeezed(text: str) -> str:
    """``text`` without whitespace: a message as a TUI shows it, wrapped and indented
    at its own width, compares equal to the message."""
    return "".join(text.split())


def _still_typed(typed: str, now: str, tail: str) -> bool:
    """Whether ``now`` still shows the message's end (``tail``) in the input box it
    stood in on screen ``typed``: its last occurrence followed by the same screen.  A
    submitted message leaves the box (the agent shows it in its history, followed by
    its work and an empty box); one whose end ``typed`` does not show cannot be told."""
    before, after = _squeezed(typed), _squeezed(now)
    at, at_now = before.rfind(tail), after.rfind(tail)
    if at < 0 or at_now < 0:
        return False
    return before[at + len(tail) :] == after[at_now + len(tail) :]


def _check_name(name: str, what: str) -> None:
    if not _NAME.fullmatch(name):
        raise HookFailed(
            f'invalid tmux {what} name "{name}": use letters, digits, "/", "_" and "-"'
        )


def _literal(text: str) -> str:
    """``text`` as a tmux argument that tmux will not read as a command separator.

    tmux ends a command at an argument ending in ``;`` and turns a final ``\\;`` into
    a literal ``;``; so a final ``;`` is sent as ``\\;``.
    """
    return text[:-1] + "\\;" if text.endswith(";") else text


def _err(stderr: Sequence[str]) -> str:
    return " ".join(" ".join(stderr).split()) or "no error message"


def _keep_dead(session: str, window: str) -> list[str]:
    """Keep the window's pane when its agent exits, so its death (and exit status) shows."""
    return ["set-option", "-w", "-t", f"={session}:={window}", "remain-on-exit", "on"]


def _no_server(stderr: Sequence[str]) -> bool:
    text = " ".join(stderr)
    return any(marker in text for marker in _NO_SERVER) or "No such file" in text
