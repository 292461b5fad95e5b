"""Hook actions: what a workflow's ``hooks:`` lists name, and the adapters they drive.

`actions` (worktrees, agents, reviewers, notify_worker, spawn_next, remotes), `notify`,
`command` (run_command), and `registry` (every action by name, for the composition
root).  The adapters: `workspace` (the worktree pool), `places` (where a task's agent
is: its worktree and tmux window), `workcopy` (the agent's TASK.md copy), `tmux` (the
one tmux adapter) with `runfiles` and `launch` (the pane launcher), `harness` (how each
coding agent is started), `git` (the one git subprocess helper), `github` (``gh``),
`snapshots` (never lose work), `watcher` (starting and waking the monitor), `adapters`
(the liveness probe).  `bindings` is this host's record of the worktree, session and
agent run it bound to each task (the only ground for a local side effect), `adopt`
takes over an older installation's running tasks once, and `unbind` undoes a task's
local bindings without running any hook.
"""
