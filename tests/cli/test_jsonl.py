"""The `exec --json` lines (cli/jsonl.py) against their documentation: every line type
in docs/headless.md's table is a struct with exactly the fields the table names, and
every struct is in the table."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from codecoder.cli import jsonl
from codecoder.kernel.events import AskUser, NewToken, Subagent, ToolFinished
from codecoder.kernel.messages import Text, ToolResult
from codecoder.kernel.oneshot import Oneshot

DOC = Path(__file__).resolve().parents[2] / "docs" / "headless.md"
_ROW = re.compile(r"^\| `([a-z_]+)` \| (.*) \|$")
_FIELD = re.compile(r"`([a-z_]+)`")


def documented() -> dict[str, set[str]]:
    """type → the backticked names its row mentions (fields, and some of their values)."""
    rows: dict[str, set[str]] = {}
    for line in DOC.read_text().splitlines():
        found = _ROW.match(line)
        if found:
            kind, fields = found.groups()
            # field names are the backticked words followed by `:` or `,` or the end
            names = {
                name
                for name in _FIELD.findall(fields)
                if re.search(rf"`{name}`(?:[:,]| \(|$|\s*\{{| `)", fields)
            }
            rows[kind] = names
    return rows


def fields_of(line_type: type) -> set[str]:
    return {f.name for f in msgspec.structs.fields(line_type)} - {"turn"}


def test_every_line_type_is_documented_with_its_fields() -> None:
    docs = documented()
    structs = {
        str(t.__struct_config__.tag): t for t in jsonl.LINE_TYPES if t is not jsonl.SessionLine
    }
    assert set(docs) == set(structs)
    for kind, line_type in structs.items():
        missing = fields_of(line_type) - docs[kind]
        assert not missing, f"{kind}: {sorted(missing)} not in docs/headless.md"


def test_a_finished_call_and_a_question_read_as_documented() -> None:
    result = ToolResult("call_1", (Text("ok"),), "success")
    line = jsonl.encode(jsonl.line_for(ToolFinished("call_1", "read_file", result=result), 3))
    assert msgspec.json.decode(line) == {
        "type": "tool_finished",
        "turn": 3,
        "id": "call_1",
        "name": "read_file",
        "status": "success",
        "content": "ok",
        "error": None,
    }
    reply: Oneshot[str] = Oneshot("req_7")
    asked = msgspec.json.decode(jsonl.encode(jsonl.line_for(AskUser("why?", ("a",), reply), 1)))
    assert asked["request_id"] == "req_7" and asked["type"] == "ask_user"


def test_a_subagent_line_nests_its_event_without_a_turn() -> None:
    line = jsonl.line_for(Subagent("sub-1", NewToken("hi")), 2)
    assert msgspec.json.decode(jsonl.encode(line)) == {
        "type": "subagent",
        "turn": 2,
        "agent_id": "sub-1",
        "event": {"type": "new_token", "text": "hi"},
    }
