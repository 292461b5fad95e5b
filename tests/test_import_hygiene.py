"""The core never imports UI libraries (STYLE §10)."""

from __future__ import annotations

import subprocess
import sys

CORE = ["orange.store", "orange.engine", "orange.hooks"]
UI = ("typer", "rich", "textual", "click")


def test_core_packages_do_not_import_ui_libraries() -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        f"for name in {CORE!r}:\n"
        "    pkg = importlib.import_module(name)\n"
        "    for mod in pkgutil.walk_packages(pkg.__path__, name + '.'):\n"
        "        importlib.import_module(mod.name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {UI!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
