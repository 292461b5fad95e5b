"""What a person asks for that is not a workflow hook action.

`launch` (create a task and start its agent), `merge` (``orange task merge``),
`rename` (a task's branch, live), `workspaces` (``orange workspace init|list|gc``),
`install` with `skills` and `claude_stop` (teach the coding agents Orange's protocol).
"""
