"""What a person asks for that is not a workflow hook action, a module per command.

`create` (``orange task create``: create a task and start its agent), `merge`
(``orange task merge``), `rename` (a task's branch, live), `workspaces` (``orange
workspace init|list|gc``), `install` with `skills` and `firstuse` (teach the coding
agents Orange's protocol; the check their stop hooks run is `orange.agent_hooks`,
`claude_stop` only keeps older settings working), `doctor`, `stats`, `train`
(``orange task merge --ready``), `trust` (``orange workflow trust``).
"""
