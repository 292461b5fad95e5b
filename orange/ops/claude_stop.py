"""Where the agents' stop check lived before it became `orange.agent_hooks.stop`.

Agent settings written by an older `orange install` run ``python -P -m
orange.ops.claude_stop ORANGE``; this keeps them working until `orange install` (which
`orange doctor` asks for) rewrites them.  Like the check, it imports nothing else.
"""

from __future__ import annotations

import sys

from orange.agent_hooks.stop import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
