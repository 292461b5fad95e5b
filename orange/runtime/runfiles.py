"""Private files Orange hands to tmux: the launcher's spec, a message to paste.

Each is created fresh (``O_EXCL``, mode 0600) in ``$ORANGE_HOME/run`` (mode 0700), so
nothing an agent's argv or a message holds ever passes through a shell or tmux's own
argument parsing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from orange.errors import HookFailed
from orange.home import orange_home


def run_dir() -> Path:
    path = orange_home() / "run"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def private_file(prefix: str, suffix: str, content: str) -> Path:
    path = run_dir() / f"{prefix}-{os.urandom(8).hex()}{suffix}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(content)
    return path


def write_spec(argv: Sequence[str], cwd: Path | str, env: Mapping[str, str]) -> Path:
    for key, value in env.items():
        if not key or "=" in key or "\0" in key or not isinstance(value, str) or "\0" in value:
            raise HookFailed(f"invalid environment variable for the agent: {key!r}")
    spec = {"argv": list(argv), "env": dict(env), "cwd": str(Path(cwd).resolve())}
    return private_file("launch", ".json", json.dumps(spec, ensure_ascii=False))
