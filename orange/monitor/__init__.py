"""The monitor: a driver that notices dead agents and applies the workflow's exit rules.

`loop` holds one pass and the loop (one per host); `agentscreens` reads the panes of
agents gone quiet for a screen on which the agent program waits for a person.
Starting, stopping and waking the monitor is `orange.runtime.watcher`'s, so the layers
below never import this package.
"""
