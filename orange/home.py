"""``$ORANGE_HOME`` (default ``~/orange``): projects, user workflows, config, logs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from orange.errors import InvalidInput


def orange_home() -> Path:
    raw = os.environ.get("ORANGE_HOME")
    return Path(raw).expanduser() if raw else Path.home() / "orange"


def hosts_file() -> Path:
    """The hosts this machine drives (`orange.hosts.roster`): a file that exists only
    once a host is registered."""
    return orange_home() / "hosts.json"


def host_name() -> str:
    """This machine's name for runtime fields (``ORANGE_HOST`` overrides it)."""
    return os.environ.get("ORANGE_HOST") or os.uname().nodename  # = socket.gethostname()


def load_config() -> dict[str, Any]:
    """``$ORANGE_HOME/config.yml`` as a mapping ({} when absent)."""

    path = orange_home() / "config.yml"
    if not path.is_file():
        return {}
    # PyYAML only when there are settings to read: a task update or a listing reads
    # none, and importing it costs more than the rest of an agent's summary update.
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        reason = " ".join(str(exc).split())
        raise InvalidInput(f"{path}: not valid YAML: {reason}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: must be a mapping of settings")
    return data
