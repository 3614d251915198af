"""Sample messages covering every kind the store must keep (shared by the tests here)."""

from __future__ import annotations

from codecoder.kernel.messages import (
    Message,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    tool_result,
    user_message,
)


def every_kind() -> list[Message]:
    """A short session with each item kind, each result status and an interrupted message."""
    return [
        Message(id=0, role="system", items=(Text("You are a coding agent."),)),
        user_message("Fix the parser\nIt fails on empty input.", id=1),
        Message(
            id=2,
            role="assistant",
            items=(
                Reasoning("Look at the parser first.", token="sig-Zm9vYmFy/+=="),
                Reasoning("No token on this one."),
                Text("Reading it."),
                ToolCall(id="call_1", name="read_file", args={"path": "src/p.py", "n": [1, 2.5]}),
                ToolCall(id="call_2", name="run_command", args={}, raw_args='{"cmd": "ls'),
                ToolCall(id="call_3", name="run_command", args={"cmd": "sleep 100"}),
            ),
        ),
        Message(
            id=3,
            role="tool",
            items=(
                tool_result("call_1", "def parse(s):\n    return s.split()\n"),
                ToolResult(
                    tool_call_id="call_2", content=(Text("bad"), Text(" args")), status="error"
                ),
                tool_result("call_3", "", status="cancelled"),
            ),
        ),
        Message(
            id=4,
            role="assistant",
            items=(Text("The fix is to handle ünïcode 🚀 and"),),
            status="interrupted",
        ),
    ]


def exchange(first_id: int, rounds: int) -> list[Message]:
    """`rounds` valid user → assistant(call) → tool → assistant exchanges from `first_id`."""
    out: list[Message] = []
    next_id = first_id
    for n in range(rounds):
        call = ToolCall(id=f"c{next_id}", name="read_file", args={"path": f"f{n}.py"})
        out += [
            user_message(f"question {n}", id=next_id),
            Message(id=next_id + 1, role="assistant", items=(Text(f"looking {n}"), call)),
            Message(id=next_id + 2, role="tool", items=(tool_result(call.id, f"content {n}"),)),
            Message(id=next_id + 3, role="assistant", items=(Text(f"answer {n}"),)),
        ]
        next_id += 4
    return out
