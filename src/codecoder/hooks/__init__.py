"""Hooks: the user's own commands, run at points of a session (issue 18, docs/hooks.md).

`[[hooks.EVENT]]` tables name a command for one of six events (`session_start`,
`user_prompt`, `pre_tool`, `post_tool`, `pre_compact`, `stop`). Each run gets a JSON
object on stdin; exit 0 goes on (for some events stdout adds context for the model),
exit 2 blocks with stderr as the reason, any other exit is a warning.

- config.py: which hooks a session runs. The user's always; a project's only in a folder
  the user trusted, and only once the user approved that exact hook for that folder (a
  digest, as for MCP project servers), so a repository cannot run a command by planting
  or changing a hook (CVE-2025-59536: hooks that ran before the trust dialog).
- runner.py: runs the hooks of an event through the session's ProcessManager (their trees
  killed on cancel and at their timeout), in the sandbox mode the model's commands get,
  like plan gates: a hook runs workspace content. Only the user's own hook may say
  `sandbox = false`.
- bridge.py: where hooks meet the agent, all at the edge: a tool wrapper (pre_tool,
  post_tool), the kernel's PromptGate and StopGate ports (session_start, user_prompt,
  stop), the compactor's gate (pre_compact), and a ToolSource whose notices carry the
  warnings, so everything a hook changes reaches the loop through its journal and a
  replay runs no hook.
"""

from codecoder.hooks.config import EVENTS, HookEvent, HookSet, HookSpec

__all__ = ["EVENTS", "HookEvent", "HookSet", "HookSpec"]
