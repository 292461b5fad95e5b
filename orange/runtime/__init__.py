"""The runtime: the adapters every driver uses to act on this host.

`git` (the one git subprocess helper), `tmux` (the one tmux adapter) with `runfiles`,
`launcher` (the pane launcher) and `tmuxclient` (a person's view of a session),
`workspace` (the worktree pool), `places` (where a task's agent is: its worktree and
tmux window), `prepare`/`ready`/`settingup` (making a worktree ready), `workcopy` (the
agent's TASK.md copy), `harness` (how each coding agent is started), `github` (``gh``),
`snapshots` (never lose work), `watcher` (starting and waking the monitor), `notices`
(telling a human), `ending` (ending a session, also from inside it), `adapters` (the
liveness probe and working copies the engine is handed).  `bindings` is this host's
record of the worktree, session and agent run it bound to each task (the only ground
for a local side effect), `adopt` takes over an older installation's running tasks
once, and `unbind` undoes a task's local bindings without running any hook.
"""
