"""What the coding agents run on their own events, outside Orange's process.

`stop` is the stop check every harness runs when its agent stops (``python -P -m
orange.agent_hooks.stop ORANGE``); `idle` is the plugin / extension source that makes
opencode and pi run that same check.  `orange install` writes them into the agents'
settings.  Neither imports anything of Orange: they run on every stop of every agent
session.  (Not the workflow's hook actions, `orange.hooks`, nor git's, `orange.githooks`.)
"""
