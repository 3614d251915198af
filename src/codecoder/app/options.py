"""What a face asks of an agent: the typed options every face turns its input into
(command-line flags, an ACP `session/new`), once, at its edge."""

from __future__ import annotations

import msgspec

from codecoder.approval import ApprovalMode
from codecoder.sandbox import SandboxMode


class AgentOptions(msgspec.Struct, frozen=True):
    """How to build one agent session (DESIGN.md §7: the `exec` flags)."""

    model: str | None = None
    """`provider/model`; None: the resumed session's model, else the config's default."""
    script: str | None = None
    """A codecoder-script/1 file: the scripted provider instead of a model."""
    cwd: str | None = None
    approval: ApprovalMode = "ask"
    max_rounds: int = 100
    trace: str | None = None
    trace_bodies: bool = False
    continue_: bool = False
    """Go on with the workspace's last session."""
    resume: str | None = None
    """Go on with this session (an id or a prefix of one)."""
    sandbox: SandboxMode | None = None
    """`--sandbox`; None: `[sandbox] mode` of the user's config, else by the approval
    mode (docs/sandbox.md)."""
    attended: bool = True
    """Someone can answer the agent's questions: a terminal client or an editor; `exec`
    only with `--stdin-replies`. The model is told, and offered only what can run."""
