"""Running an architect or SWE agent non-interactively: one prompt in, one answer out.

An `ExecHarness` is an argv template (``{prompt}`` becomes the whole prompt inside one
argument, never split, never given to a shell) and the envelope its stdout wraps the
answer in.  `invoke` runs it in its own process group, appends the prompt and then
everything it prints to a log as it comes (so `tail -f` or `orange task peek` shows the
agent live), and stops the whole group on timeout.  `ask` adds the contract: extract,
parse, and one retry with the parse error in the prompt.

Built-ins come from each tool's documented non-interactive mode (comments below say
where); a user harness gets ``exec_command`` in ``$ORANGE_HOME/config.yml`` and prints
its answer itself::

    harnesses:
      mine:
        command: [my-agent, "{prompt}"]
        exec_command: [my-agent, --once, "{prompt}"]
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, BinaryIO, NamedTuple, TypeVar

from orange.errors import InvalidInput
from orange.home import orange_home
from orange.run.contracts import ContractError
from orange.runtime.harness import PROMPT, load_harnesses

T = TypeVar("T")


class ExecHarness(NamedTuple):
    name: str
    argv: tuple[str, ...]  # template: an element holding "{prompt}" gets the prompt
    envelope: str  # "claude-json" | "codex-exec" | "plain"


class Invocation(NamedTuple):
    answer: str  # the agent's stdout (the envelope still on: see `extract_answer`)
    exit_code: int
    log: Path
    started: datetime | None = None  # when it ran: its usage is read in that window
    ended: datetime | None = None


class AgentTimeout(Exception):
    """The agent gave no answer in time; its process group was stopped.  ``invocation``:
    what it printed until then and when it ran (the ledger reads its usage)."""

    def __init__(self, message: str, invocation: Invocation | None = None) -> None:
        super().__init__(message)
        self.invocation = invocation


# What an agent's failure says of its log: these messages go into the committed RUN.md,
# which never names a local path (the logs are this host's, `orange run show` lists them).
LOG_HINT = "its log is among this host's run logs"


class AgentFailed(Exception):
    """The agent could not start, exited non-zero, or reported an error itself."""


# Built-ins, each in its documented one-turn mode, with full permissions (the SWE edits
# and tests its worktree; nobody is there to approve a command).
#   claude    `-p/--print` runs one turn; `--output-format json` prints one JSON object
#             at the end: `result` (the answer), `is_error`, `subtype`, `session_id`,
#             `total_cost_usd`, `usage` (code.claude.com/docs/en/headless, "Output
#             formats"; docs.claude.com/docs/claude-code/sdk/sdk-headless).  "--" ends
#             the options as for the interactive worker (orange.runtime.harness).
#   codex     `codex exec` is the non-interactive mode; it streams progress to stderr
#             and only the final agent message to stdout (developers.openai.com/codex/
#             noninteractive); `--json` makes stdout JSONL events instead, the answer in
#             the last `item.completed` whose item is an `agent_message` (openai/codex
#             PR #4525 "codex exec --json"; called `assistant_message`/`item_type` in
#             its first release, read too).  JSON events put commands and edits in the
#             log as well.  No `--no-daemon` (the interactive workers' flag,
#             orange.runtime.harness): `codex exec` runs its tool calls in its own process,
#             never in the shared app-server daemon (seen with codex-cli 0.171.0), and
#             its `--help` has no such option.
#   opencode  `opencode run [message..]` sends one message and prints the reply
#             (opencode.ai/docs/cli "run"); its `--format json` event schema is not
#             documented there, so the plain reply is read (envelope "plain").
#   pi        `-p/--print` runs once and prints the reply (pi 0.73.1 `--help`; pi's
#             docs/cli.md "Invocation and output"); `--mode json` events are not
#             documented field by field, so plain text.  No "--": 0.73.1 rejects it.
BUILTIN_EXEC: dict[str, ExecHarness] = {
    "claude": ExecHarness(
        "claude",
        (
            "claude",
            "-p",
            "--output-format",
            "json",
            "--dangerously-skip-permissions",
            "--",
            PROMPT,
        ),
        "claude-json",
    ),
    "codex": ExecHarness(
        "codex",
        ("codex", "exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "--", PROMPT),
        "codex-exec",
    ),
    "opencode": ExecHarness("opencode", ("opencode", "run", PROMPT), "plain"),
    "pi": ExecHarness("pi", ("pi", "-p", PROMPT), "plain"),
}

RETRY = "Your previous answer could not be used: {error}. Answer again with only the JSON object."
STOP_GRACE = 3.0  # seconds between SIGTERM and SIGKILL of an agent's process group
DRAIN_GRACE = 2.0  # seconds to wait for stdout to close once the agent has exited
_PROC = Path("/proc")  # process states (Linux); elsewhere signals answer, zombies included


def exec_harness(name: str) -> ExecHarness:
    """The harness ``name`` run non-interactively: a user's ``exec_command`` from
    config.yml (a user harness named like a built-in replaces it), else the built-in."""
    table = load_harnesses()
    harness = table.get(name)
    if harness is None:
        raise InvalidInput(
            f'unknown harness "{name}"',
            hint=f"use one of {', '.join(table)}, or define it under `harnesses:` in "
            f"{orange_home() / 'config.yml'} with an exec_command",
        )
    if not harness.builtin:
        if not harness.exec_command:
            raise InvalidInput(
                f'harness "{name}" has no exec_command, so it cannot run non-interactively',
                hint=f'add harnesses: {name}: exec_command: [..., "{PROMPT}"] to '
                f"{orange_home() / 'config.yml'}",
            )
        return ExecHarness(name, harness.exec_command, "plain")
    if name not in BUILTIN_EXEC:  # the demo stand-in plays a pane's agent, nothing else
        raise InvalidInput(
            f'harness "{name}" cannot run non-interactively',
            hint=f"use one of {', '.join(BUILTIN_EXEC)}, or a harness with an exec_command "
            f"under `harnesses:` in {orange_home() / 'config.yml'}",
        )
    return BUILTIN_EXEC[name]


def extract_answer(h: ExecHarness, stdout: str) -> str:
    """The answer inside ``stdout``'s envelope.  A broken envelope is a `ContractError`
    (worth a retry); an error the agent reports in it is `AgentFailed`."""
    if h.envelope == "claude-json":
        return _claude(stdout)
    if h.envelope == "codex-exec":
        return _codex(stdout)
    return stdout


def _claude(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.strip()]
    # One object; with stream-json (or a stray warning first) the last line is it.
    data = None
    for candidate in (stdout.strip(), lines[-1] if lines else ""):
        try:
            data = json.loads(candidate)
            break
        except ValueError:
            continue
    if not isinstance(data, dict) or not isinstance(data.get("result"), str):
        raise ContractError('claude printed no JSON envelope with a "result" text')
    if data.get("is_error") is True:
        detail = " ".join(data["result"].split())[:300] or data.get("subtype", "")
        raise AgentFailed(f"claude reported an error: {detail}")
    return str(data["result"])


def _codex(stdout: str) -> str:
    answer: str | None = None
    failure: str | None = None
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        item = event.get("item")
        if event.get("type") == "item.completed" and isinstance(item, dict):
            kind = item.get("type", item.get("item_type"))
            if kind in ("agent_message", "assistant_message") and isinstance(item.get("text"), str):
                answer = item["text"]
        elif event.get("type") == "turn.failed":
            error = event.get("error")
            failure = str(error.get("message", "")) if isinstance(error, dict) else "turn failed"
    if failure is not None:
        raise AgentFailed(f"codex reported an error: {' '.join(failure.split())[:300]}")
    if answer is None:
        raise ContractError("codex printed no agent message (expected `codex exec --json` events)")
    return answer


def invoke(
    h: ExecHarness,
    prompt: str,
    *,
    cwd: Path,
    timeout: float,
    log: Path,
    env: Mapping[str, str] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> Invocation:
    """Run ``h`` once with ``prompt`` in ``cwd``; ``env`` is added to this environment.

    The agent leads its own process group (a killed runner leaves it running, for
    `resume` to adopt or stop); ``on_start(pid)`` is called as soon as it runs.  stdout
    and stderr go to ``log`` as they come, after the prompt; stdout is also returned."""
    argv = [arg.replace(PROMPT, prompt) for arg in h.argv]
    started = time.monotonic()
    began = datetime.now(UTC)
    with _private_log(log) as sink:
        _write(sink, f"=== {_now()} {h.name} in {cwd}\n--- prompt ---\n{prompt}\n--- output ---\n")
        proc = _start(h, argv, cwd=cwd, env=env, sink=sink)
        assert proc.stdout is not None
        tee = _Tee(proc.stdout, sink)
        try:
            if on_start is not None:
                on_start(proc.pid)
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(proc, tee)
            _write(sink, f"\n=== no answer within {timeout:g} s: its process group was stopped\n")
            raise AgentTimeout(
                f"{h.name} gave no answer within {timeout:g} s ({LOG_HINT})",
                Invocation(tee.text(), -1, log, began, datetime.now(UTC)),
            ) from None
        except BaseException:
            _stop(proc, tee)  # this runner stops watching it (Ctrl-C, a failing callback)
            raise
        if not tee.drained(DRAIN_GRACE):
            _write(sink, "\n=== the agent exited; what it left running was stopped\n")
            _stop(proc, tee)
        _write(sink, f"\n=== exit code {code} after {time.monotonic() - started:.1f} s\n")
    return Invocation(tee.text(), code, log, began, datetime.now(UTC))


def ask(
    h: ExecHarness,
    prompt: str,
    parse: Callable[[str], T],
    *,
    cwd: Path,
    timeout: float,
    log: Path,
    env: Mapping[str, str] | None = None,
    on_start: Callable[[int], None] | None = None,
    spent: Callable[[Invocation], None] | None = None,
) -> T:
    """Invoke, extract, parse; a `ContractError` earns one retry with the error added to
    the prompt, and a second one is raised.  A non-zero exit is `AgentFailed`.
    ``spent(invocation)``: after each invocation, answer or not, timed out too (the ledger)."""
    attempt = prompt
    for last in (False, True):
        try:
            run = invoke(h, attempt, cwd=cwd, timeout=timeout, log=log, env=env, on_start=on_start)
        except AgentTimeout as exc:  # what it spent until it was stopped counts too
            if spent is not None and exc.invocation is not None:
                spent(exc.invocation)
            raise
        if spent is not None:
            spent(run)
        try:
            return parse(_answer(h, run))
        except ContractError as exc:
            if last:
                raise
            attempt = f"{prompt}\n\n{RETRY.format(error=exc)}"
    raise AssertionError("unreachable")


def _answer(h: ExecHarness, run: Invocation) -> str:
    """The answer of a run that exited 0; an error the envelope reports comes first."""
    exited = AgentFailed(f"{h.name} exited with code {run.exit_code} ({LOG_HINT})")
    try:
        answer = extract_answer(h, run.answer)
    except ContractError:
        if run.exit_code != 0:
            raise exited from None
        raise
    if run.exit_code != 0:
        raise exited
    return answer


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    if pid <= 0:
        return False
    if not _PROC.is_dir():
        return _signal_ok(pid, 0)  # no /proc (macOS): a zombie counts as running
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def stop_group(pid: int) -> bool:
    """Stop the process group an agent started by `invoke` leads (SIGTERM, then SIGKILL
    after a grace); True if anything of it was still running.  A reused pid that leads
    no group of ours has no members under that group id, so nothing else is touched."""
    if not _members(pid):
        return False
    for sig, grace in ((signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, STOP_GRACE)):
        _signal_group(pid, sig)
        deadline = time.monotonic() + grace
        while _members(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if not _members(pid):
            break
    return True


# -- helpers ------------------------------------------------------------------------


def _start(
    h: ExecHarness, argv: list[str], *, cwd: Path, env: Mapping[str, str] | None, sink: IO[bytes]
) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=sink,
            env={**os.environ, **env} if env else None,
            start_new_session=True,
        )
    except OSError as exc:
        _write(sink, f"=== could not start: {exc}\n")
        reason = exc.strerror or str(exc)
        if exc.errno == errno.E2BIG:
            longest = max(len(arg.encode()) for arg in argv)
            reason += f" (an argument of {longest} bytes: keep prompts under 100 KB)"
        raise AgentFailed(f"cannot start {h.name}: {reason} ({LOG_HINT})") from None


class _Tee:
    """Copies a pipe to the log as it comes and keeps what it read."""

    def __init__(self, pipe: IO[bytes], sink: IO[bytes]) -> None:
        self._chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._pump, args=(pipe, sink), daemon=True)
        self._thread.start()

    def _pump(self, pipe: IO[bytes], sink: IO[bytes]) -> None:
        fd = pipe.fileno()
        try:
            while chunk := os.read(fd, 65536):
                self._chunks.append(chunk)
                _write(sink, chunk)
        finally:
            pipe.close()

    def drained(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def text(self) -> str:
        return b"".join(self._chunks).decode("utf-8", errors="replace")


def _stop(proc: subprocess.Popen[bytes], tee: _Tee) -> None:
    stop_group(proc.pid)
    proc.wait()
    tee.drained(DRAIN_GRACE)


def _members(pgid: int) -> list[int]:
    """Running processes (zombies aside) in process group ``pgid``."""
    if pgid <= 1:
        return []
    if not _PROC.is_dir():
        return [pgid] if _signal_ok(-pgid, 0) else []
    found = []
    try:
        entries = list(_PROC.iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(entry.name))
    return found


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_ok(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _write(sink: IO[bytes], data: str | bytes) -> None:
    sink.write(data.encode("utf-8", errors="replace") if isinstance(data, str) else data)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _private_log(log: Path) -> BinaryIO:
    """``log`` opened for appending, readable by this user only (0600 in a 0700 folder,
    as the crash logs: a log holds the prompt, task text and the agent's output)."""
    log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.fchmod(fd, 0o600)  # a log made by an older Orange
    return os.fdopen(fd, "ab", buffering=0)
