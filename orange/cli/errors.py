"""The one error handler at the entry point (STYLE §3).

Exit codes: 0 success; 1 a user error (one line on stderr saying what was wrong and
what to do; ``{"error": ...}`` on stdout under ``--json``); 2 usage; 3 anything
unexpected, with the traceback written to a log file under ``$ORANGE_HOME/logs``.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from orange.errors import OrangeError
from orange.home import orange_home

EXIT_USER = 1
EXIT_USAGE = 2
EXIT_BUG = 3


def wants_json(argv: list[str]) -> bool:
    return "--json" in argv


def report_user_error(exc: OrangeError, argv: list[str]) -> int:
    if wants_json(argv):
        print(json.dumps({"error": str(exc)}))
    print(f"orange: {exc}", file=sys.stderr)
    return EXIT_USER


def report_usage_error(message: str, argv: list[str]) -> int:
    if wants_json(argv):
        print(json.dumps({"error": message}))
    print(f"orange: {message} (see `orange --help`)", file=sys.stderr)
    return EXIT_USAGE


def report_bug(exc: BaseException, argv: list[str]) -> int:
    log = _write_log(exc, argv)
    where = f"; details in {log}" if log else ""
    message = f"internal error: {type(exc).__name__}: {exc}{where}"
    if wants_json(argv):
        print(json.dumps({"error": message}))
    print(f"orange: {message}", file=sys.stderr)
    return EXIT_BUG


def _write_log(exc: BaseException, argv: list[str]) -> Path | None:

    try:
        logs = orange_home() / "logs"
        logs.mkdir(parents=True, exist_ok=True, mode=0o700)
        logs.chmod(0o700)  # crash logs hold the argv, and summaries may hold secrets
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        path = logs / f"crash-{stamp}.log"
        import traceback  # loaded for a bug's report only, off every command's path

        text = "".join(traceback.format_exception(exc))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(f"argv: {argv}\n\n{text}")
    except OSError:
        return None
    return path
