"""The ``orange`` command: a thin typer layer over the core (STYLE §1).

`main` registers every command group explicitly and maps every outcome to an exit code;
`fast` runs the commands agents call all the time (``task update``, ``task list``)
without loading typer (`update`, `listing`); `engine` gets a task's engine from the
composition root and prints what a move did; `context` finds the project and task;
`output` and `errors` print; each other module holds one group's commands (`task`,
`moves`, `runtime`, `create`, `project`, `workflow`, `workspace`, `monitor`,
`githooks`, `tasks_checkout`, `install`, `demo`).
"""
