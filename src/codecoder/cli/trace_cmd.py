"""`codecoder trace FILE`: a `--trace` file, readable (docs/replay.md).

A timeline per thread, in the trace's order (`seq`, the order the channels carried
things), each line with its time since the trace began; turn boundaries; permission
decisions with their reasons; runs of tokens folded into one line; and, at the end, the
gap between each Cancel and the Done it caused. `--turn`, `--thread` and `--grep` narrow
what is shown (the cancel gaps are always measured on the whole file).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from codecoder.exitcodes import EXIT_OK, EXIT_USAGE
from codecoder.terminal_text import visible
from codecoder.wording import counted

Record = dict[str, Any]

_FOLDED = ("new_token", "new_reasoning", "text_delta", "reasoning_delta", "tool_output")


def add_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    trace = subparsers.add_parser(
        "trace",
        help="print a --trace file readably",
        description="A timeline per thread of a --trace file, with turn boundaries, "
        "permission decisions and the time from each Cancel to its Done.",
    )
    trace.add_argument("file", help="a file written by --trace")
    trace.add_argument("--turn", type=int, metavar="N", help="only turn N")
    trace.add_argument("--thread", metavar="NAME", help="only this thread (e.g. agent-loop)")
    trace.add_argument("--grep", metavar="TEXT", help="only lines containing TEXT")
    trace.set_defaults(func=trace_cmd)


def trace_cmd(args: argparse.Namespace) -> int:
    try:
        records = _read(args.file)
    except OSError as exc:
        print(f"codecoder trace: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as exc:
        print(f"codecoder trace: {args.file} is not a trace: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for line in render(records, turn=args.turn, thread=args.thread, grep=args.grep):
        print(visible(line, one_line=True))  # names, ids and reasons from the run, as they are
    return EXIT_OK


def _read(path: str) -> list[Record]:
    import msgspec

    records: list[Record] = []
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = msgspec.json.decode(line)
            except msgspec.DecodeError as exc:
                raise ValueError(f"line {number}: {exc}") from None
            if not isinstance(record, dict) or "seq" not in record or "dir" not in record:
                raise ValueError(f"line {number} has no seq and dir")
            records.append(record)
    records.sort(key=lambda r: r["seq"])
    return records


def render(
    records: list[Record],
    *,
    turn: int | None = None,
    thread: str | None = None,
    grep: str | None = None,
) -> Iterator[str]:
    if not records:
        yield "(an empty trace)"
        return
    origin = records[0]["t"]
    threads: dict[str, list[Record]] = {}
    for record in records:
        threads.setdefault(record["thread"], []).append(record)
    for name, own in threads.items():
        if thread is not None and name != thread:
            continue
        shown = [r for r in own if turn is None or r["turn"] == turn]
        lines = [line for line in _timeline(shown, origin) if grep is None or grep in line]
        if not lines:
            continue
        yield f"== {name} ({counted(len(shown), 'line')}) =="
        yield from lines
        yield ""
    gaps = list(_cancel_gaps(records))
    if gaps:
        yield "== cancel → done =="
        yield from gaps


def _timeline(records: list[Record], origin: float) -> Iterator[str]:
    turn: int | None = None
    for group in _folded(records):
        first = group[0]
        if first["turn"] != turn:
            turn = first["turn"]
            yield f"-- turn {turn} --"
        stamp = f"{(first['t'] - origin) * 1000:9.1f} ms"
        yield f"{first['seq']:>6} {stamp}  {first['agent']:<8} {_describe(group)}"


def _folded(records: Iterable[Record]) -> Iterator[list[Record]]:
    """Consecutive tokens, text deltas or output chunks of the same kind as one group."""
    group: list[Record] = []
    for record in records:
        kind = _kind(record)
        if group and kind in _FOLDED and _kind(group[-1]) == kind:
            group.append(record)
            continue
        if group:
            yield group
        group = [record]
    if group:
        yield group


def _kind(record: Record) -> str:
    data = record["data"]
    return str(data.get("type", record["dir"])) if isinstance(data, dict) else record["dir"]


def _describe(group: list[Record]) -> str:
    record = group[0]
    data: dict[str, Any] = record["data"] if isinstance(record["data"], dict) else {}
    direction, kind = record["dir"], _kind(record)
    if kind in _FOLDED:
        text = "".join(_text(r["data"]) for r in group)
        chunks = sum(len(r["data"].get("chunks", ())) or 1 for r in group)
        times = f" x{chunks}" if chunks > 1 else ""
        return f"{direction} {kind}{times} {_excerpt(text)!r}"
    if direction == "decision":
        parts = "; ".join(data.get("parts", ())) or "-"
        rule = f", rule {data['rule']}" if data.get("rule") else ""
        level = data.get("level") or "?"
        return (
            f"decision {data.get('tool_call_id')}: {data.get('verdict')} "
            f"(level {level}{rule}): {data.get('reason')} [{parts}]"
        )
    if direction == "reply":
        return f"reply {data.get('request_id')} by {data.get('by') or '?'}: {_answer(data)}"
    if direction == "request":
        return (
            f"request {data.get('purpose')}: {counted(int(data.get('messages', 0)), 'message')}, "
            f"{int(data.get('bytes', 0)):,} bytes, sha256 {str(data.get('sha256', ''))[:16]}"
        )
    if direction == "compaction":
        return f"compaction: the view now starts at message {data.get('first_kept_id')}"
    if direction == "note":
        detail = str(data.get("detail", "")).strip().splitlines()
        return f"note {data.get('type')}: {detail[-1] if detail else ''}"
    return f"{direction} {kind}{_detail(kind, data)}"


def _detail(kind: str, data: dict[str, Any]) -> str:
    if kind == "process_message":
        items = data.get("message", {}).get("items", [])
        text = "".join(i.get("text", "") for i in items if isinstance(i, dict))
        return f" {_excerpt(text)!r}"
    if kind in ("tool_started", "tool_finished", "tool_call_done"):
        status = data.get("status") or (data.get("result") or {}).get("status")
        error = data.get("error")
        if error:
            status = f"error {error.get('kind')}: {_excerpt(str(error.get('message')))}"
        return f" {data.get('id')} {data.get('name')}" + (f" → {status}" if status else "")
    if kind in ("status_update", "error"):
        what = data.get("status") or data.get("kind")
        said = data.get("detail") or data.get("message")
        return f" {what}: {_excerpt(str(said))}" if said else f" {what}"
    if kind == "confirm_request":
        return f" {data.get('request_id')}: {_excerpt(str(data.get('reason')))}"
    if kind == "done":
        return f" {data.get('reason')}"
    if kind == "subagent":
        inner = data.get("event", {})
        return f" {data.get('agent_id')}: {inner.get('type')}"
    return ""


def _text(data: dict[str, Any]) -> str:
    if "chunks" in data:
        return "".join(map(str, data["chunks"]))
    return str(data.get("text", data.get("chunk", "")))


def _answer(data: dict[str, Any]) -> str:
    answer = data.get("answer")
    if isinstance(answer, dict):
        message = f" ({answer['message']})" if answer.get("message") else ""
        return f"{answer.get('decision')}{message}"
    return repr(answer)


def _cancel_gaps(records: list[Record]) -> Iterator[str]:
    """Each Cancel and the first Done of the same agent after it, by seq."""
    for index, record in enumerate(records):
        if record["dir"] != "command" or _kind(record) != "cancel":
            continue
        done = next(
            (
                r
                for r in records[index + 1 :]
                if r["dir"] == "event" and _kind(r) == "done" and r["agent"] == record["agent"]
            ),
            None,
        )
        if done is None:
            yield f"cancel #{record['seq']} ({record['agent']}): no Done after it"
        else:
            gap = (done["t"] - record["t"]) * 1000
            yield (
                f"cancel #{record['seq']} → done #{done['seq']} ({record['agent']}, "
                f"turn {done['turn']}, {done['data'].get('reason')}): {gap:.1f} ms"
            )


def _excerpt(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
