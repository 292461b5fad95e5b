"""One exception root for everything Orange reports to a user.

Every error a user can cause or fix is an `OrangeError`: the CLI prints its message
(one line) and its hint, and exits 1.  Anything else is a bug: it exits 3 and the
traceback goes to a log file under ``$ORANGE_HOME``.
"""

from __future__ import annotations


class OrangeError(Exception):
    """A problem the user can act on.  ``hint`` says what to do, when known."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        """The message and the hint on one line: the hint in parentheses, unless that
        would nest or stack them (a hint with its own parentheses, a message ending in
        one), when it follows a semicolon instead."""
        if not self.hint:
            return self.message
        if "(" in self.hint or ")" in self.hint or self.message.endswith(")"):
            return f"{self.message}; {self.hint}"
        return f"{self.message} ({self.hint})"


class NotFound(OrangeError):
    """A task, project, workflow or file that does not exist."""


class InvalidInput(OrangeError):
    """A value given on the command line or in a file that Orange cannot accept."""


class NotARepository(OrangeError):
    """A path that is not inside a git repository."""


class RefConflict(OrangeError):
    """The tasks ref kept moving under us and the write could not be applied."""


class SchemaTooNew(OrangeError):
    """The tasks ref was written by a newer Orange than this one."""


class BrokenTaskFile(OrangeError):
    """A TASK.md that does not parse."""


class WorkflowError(OrangeError):
    """A workflow file that is invalid; the message names the file and the key path."""


class IllegalTransition(OrangeError):
    """No transition of the task's workflow leads from its status to the one asked for."""


class NotPermitted(OrangeError):
    """The caller may not do this: an agent acting on another task or running a human's
    command, or a move whose ``by:`` does not list the caller (a worker taking the
    reviewer's move)."""


class GuardFailed(OrangeError):
    """A transition exists but its ``when`` condition does not hold."""


class GateFailed(OrangeError):
    """A transition's artifact gate does not hold on the task body."""


class Untrusted(OrangeError):
    """A task's committed workflow definition is not trusted on this host (DESIGN §8):
    its moves are refused here, except a human's cancel."""


class HookFailed(OrangeError):
    """A hook action failed (before the write: the move is rejected)."""


class EnvironmentProblem(OrangeError):
    """The machine said no: a read-only or missing directory, a full disk, a directory
    where a file should be.  Not a bug: one line, exit 1."""

    @classmethod
    def of(cls, exc: OSError) -> EnvironmentProblem:
        where = f": {exc.filename}" if exc.filename else ""
        return cls(
            f"{exc.strerror or exc}{where}",
            hint="check that $ORANGE_HOME and the repository are writable and the disk has room",
        )
