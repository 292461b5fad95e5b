"""The stop hook of opencode and pi (seed 003), as a plugin / extension file each.

Neither tool lets a hook refuse a stop: opencode's plugins see ``session.idle`` and pi's
extensions see ``agent_end``, both after the turn is over.  So the way to keep the agent
going is to send it a new prompt: the file runs the same check as Claude Code's stop
hook (`orange.agent_hooks.stop`, with this Python and this ``orange``, in the session's
directory) and, when that exits 2 ("keep going"), sends its message as the next user
message.  Otherwise it does nothing.

It never loops forever: after ``MAX_REMINDERS`` reminders in a row without the check
letting the agent stop, it sends no more (the last reminder says so), and the agent
waits for a person.  A failure of the check itself sends nothing.

Sources of each call (the documented shapes only):

- opencode (https://opencode.ai/docs/plugins): files in ``~/.config/opencode/plugins/``
  are loaded at startup; a plugin is an exported async function receiving
  ``{ project, client, $, directory, worktree }`` and returning hooks, among them
  ``event: async ({ event })`` which sees ``session.idle`` (its properties carry
  ``sessionID``: packages/opencode/src/session/status.ts).  The SDK client
  (https://opencode.ai/docs/sdk, "Sessions"): ``session.get({ path })`` returns the
  Session (a subagent's has a ``parentID``), ``session.prompt({ path, body })`` sends a
  prompt with ``body.parts = [{ type: "text", text }]``.
- pi (pi-coding-agent docs/extensions.md): ``~/.pi/agent/extensions/*.js`` is
  auto-discovered; an extension is a default-exported function receiving the
  ExtensionAPI; ``pi.on("agent_end", async (event, ctx) => ...)``; ``ctx.cwd`` is the
  working directory; ``pi.sendUserMessage(content, { deliverAs: "followUp" })`` sends a
  real user message ("deliverAs" is required while pi is still streaming; when idle the
  message is sent at once and triggers a turn).
"""

from __future__ import annotations

import json

FILE_NAME = "orange-stop.js"
MAX_REMINDERS = 3
# Where each harness loads Orange's file from, under the user's home.
IDLE_HOOK_DIRS: dict[str, str] = {
    "opencode": ".config/opencode/plugins",
    "pi": ".pi/agent/extensions",
}

_COMMON = """\
// Orange stop hook for __TOOL__ (seed 003); installed by `orange install`.
// __TOOL__ cannot refuse a stop, so when Orange's check (the same one Claude Code's stop
// hook runs: python -m orange.agent_hooks.stop) exits 2, its message is sent as the next
// user message.  At most __MAX__ reminders in a row; see orange/agent_hooks/idle.py.
import { spawn } from "node:child_process";

const HOOK = __HOOK__;
const MAX_REMINDERS = __MAX__;

// Runs the check in `directory`; resolves to its message when it says "keep going"
// (exit 2, message on stderr), else to null (may stop, or the check itself failed).
function runHook(directory) {
  return new Promise((resolve) => {
    const env = { ...process.env };
    delete env.CLAUDE_PROJECT_DIR; // the check then reads the directory it runs in
    let child;
    try {
      const stdio = ["ignore", "ignore", "pipe"];
      child = spawn(HOOK[0], HOOK.slice(1), { cwd: directory, env, stdio });
    } catch {
      resolve(null);
      return;
    }
    let stderr = "";
    child.stderr.on("data", (chunk) => { stderr += chunk; });
    child.on("error", () => resolve(null));
    child.on("close", (code) => resolve(code === 2 && stderr.trim() ? stderr.trim() : null));
  });
}

// Counts reminders in a row; `next(message)` is what to send now, or null.
function reminders() {
  let count = 0;
  return (message) => {
    if (message === null) {
      count = 0;
      return null;
    }
    count += 1;
    if (count > MAX_REMINDERS) return null;
    if (count < MAX_REMINDERS) return message;
    return `${message}\\n\\nOrange has now reminded you ${MAX_REMINDERS} times in a row and ` +
      "will not remind you again: report the outcome yourself (`orange task complete ID` " +
      "or `orange task stuck ID --reason ...`), or wait for a person.";
  };
}
"""

_OPENCODE = """
// The call's result, or null when it throws or its promise rejects.
const attempt = (call) => Promise.resolve().then(call).catch(() => null);

// https://opencode.ai/docs/plugins ("Basic structure", "Events": session.idle).
export const OrangeStop = async ({ client, directory }) => {
  const streaks = new Map();
  const busy = new Set();
  return {
    event: async ({ event }) => {
      const session = event?.type === "session.idle" ? event.properties?.sessionID : null;
      if (!session || busy.has(session)) return;
      busy.add(session);
      try {
        // https://opencode.ai/docs/sdk ("Sessions"): session.get({ path }); a subagent's
        // session has a parentID and is not the worker.
        const info = await attempt(() => client.session.get({ path: { id: session } }));
        if (info?.data?.parentID) return;
        if (!streaks.has(session)) streaks.set(session, reminders());
        const text = streaks.get(session)(await runHook(directory));
        if (text === null) return;
        // https://opencode.ai/docs/sdk ("Sessions"): session.prompt({ path, body }).  Not
        // awaited: it resolves only when the agent's answer is complete.
        const body = { parts: [{ type: "text", text }] };
        attempt(() => client.session.prompt({ path: { id: session }, body }));
      } catch {
        // a failure here leaves the agent stopped, never broken
      } finally {
        busy.delete(session);
      }
    },
  };
};
"""

_PI = """
// pi-coding-agent docs/extensions.md ("Writing an Extension", "agent_start / agent_end",
// "ctx.cwd", "pi.sendUserMessage(content, options?)").
export default function (pi) {
  const next = reminders();
  pi.on("agent_end", async (_event, ctx) => {
    const text = next(await runHook(ctx?.cwd || process.cwd()));
    if (text === null) return;
    try {
      pi.sendUserMessage(text, { deliverAs: "followUp" });
    } catch {
      // a pi that refuses the message leaves the agent stopped, never broken
    }
  });
}
"""

_TOOLS = {"opencode": ("opencode", _OPENCODE), "pi": ("pi", _PI)}


def idle_hook_source(harness: str, hook: list[str]) -> str:
    """The plugin (opencode) or extension (pi) file that runs ``hook`` when the agent
    stops and sends its "keep going" message as the next prompt."""
    tool, body = _TOOLS[harness]
    return (
        _COMMON.replace("__TOOL__", tool)
        .replace("__MAX__", str(MAX_REMINDERS))
        .replace("__HOOK__", json.dumps(hook))
        + body
    )
