"""The ``orange`` command: a thin typer layer over the core (STYLE §1).

`main` maps every outcome to an exit code; `fast` runs the commands agents call all the
time (``task update``, ``task list``) without loading typer; each other module holds
the commands of one group and prints what the core did.
"""
