"""Only the engine writes `status`: a scan of the code base fails if anything else does."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "orange"
ENGINE = PACKAGE / "engine"


def _status_writes(path: Path) -> list[int]:
    tree = ast.parse(path.read_text())
    lines = []
    # A dict serialised as JSON is a message about a task (a webhook), not a task.
    messages = {
        id(arg)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "json.dumps"
        for arg in node.args
    }
    for node in ast.walk(tree):
        if id(node) in messages:
            continue
        if isinstance(node, ast.Call):
            if any(kw.arg == "status" for kw in node.keywords) and _is_field_write(node):
                lines.append(node.lineno)
        elif isinstance(node, ast.Dict):
            if any(isinstance(k, ast.Constant) and k.value == "status" for k in node.keys):
                lines.append(node.lineno)
        elif isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.slice, ast.Constant)
                    and target.slice.value == "status"
                ):
                    lines.append(node.lineno)
    return lines


def _is_field_write(node: ast.Call) -> bool:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in {"with_fields", "update", "dict", "Task", "replace"}


# An `orange run`'s record (runs/<id>/RUN.md) has a status of its own, the run's and
# its subtasks' steps, and `orange run --json` prints it; the run's tasks move only
# through the engine (`orange.run.waves._move`, `orange.run.control.cancel`).
RUN_RECORDS = {"run/runner.py", "run/control.py", "cli/run.py"}


def test_nothing_outside_the_engine_writes_status() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): lines
        for path in PACKAGE.rglob("*.py")
        if ENGINE not in path.parents
        and str(path.relative_to(PACKAGE)) not in RUN_RECORDS
        and (lines := _status_writes(path))
    }
    assert offenders == {}


def test_the_scan_does_catch_a_status_write(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f(task):\n    return task.with_fields(status='done')\n")
    assert _status_writes(bad) == [2]
    bad.write_text("fields = {'status': 'done'}\n")
    assert _status_writes(bad) == [1]
