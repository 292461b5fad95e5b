"""What a person asks for that is not a workflow hook action.

`launch` (create a task and start its agent), `merge` (``orange task merge``),
`rename` (a task's branch, live), `workspaces` (``orange workspace init|list|gc``),
`install` with `skills` (teach the coding agents Orange's protocol; the check their
stop hooks run is `orange.agent_hooks`, `claude_stop` only keeps older settings working).
"""
