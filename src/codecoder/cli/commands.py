"""The command line's parser and subcommand entry points (imported once a command runs,
never for `--version`). The argparse namespace stops here: each entry point turns it into
the typed options its command takes (AgentOptions, ExecOptions, DemoOptions)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, NoReturn

import msgspec

from codecoder.app.options import AgentOptions
from codecoder.approval import MODES as APPROVAL_MODES
from codecoder.sandbox import MODES as SANDBOX_MODES

COMMANDS = (
    "exec",
    "resume",
    "demo",
    "models",
    "doctor",
    "sessions",
    "prompt",
    "trust",
    "untrust",
    "daemon",
    "acp",
    "replay",
    "trace",
    "batch",
    "mcp",
    "hooks",
    "undo",
)
_WITH_VALUE = ("-m", "--model", "--script", "-C", "--cwd", "--approval", "--max-rounds")
_WITH_VALUE += ("--trace", "--resume", "--sandbox")
_OWN = ("-h", "--help", "--version", "-V")


def parse(argv: list[str]) -> argparse.Namespace:
    """Parse a command line. Options written before the command (`codecoder -m X exec …`)
    are moved after it, where that command's parser reads them; one it does not take is
    refused by name. Only the command's own parser is built when it is `exec`."""
    command, leading, rest = _split(argv)
    parser = build_parser(INTERACTIVE if _only_options(argv) else command)
    if command is None or not leading:
        return parser.parse_args(argv)
    taken = _subparser(parser, command)
    for word in leading:
        name = _option_name(word)
        if name is not None and taken is not None and name not in taken._option_string_actions:
            action = parser._option_string_actions.get(name)
            shown = "/".join(action.option_strings) if action is not None else name
            parser.error(f"{shown} does not apply to `codecoder {command}`")
    return parser.parse_args([command, *leading, *rest])


INTERACTIVE = ""
"""build_parser's `first` for a line with options only (`codecoder -m X`): the
interactive client, whose launch is measured; no other command's module is imported."""


def _only_options(argv: list[str]) -> bool:
    """Whether every word is an option or an option's value (no command, no help)."""
    index = 0
    while index < len(argv):
        word = argv[index]
        if word in _OWN or not word.startswith("-") or word in ("-", "--"):
            return False
        index += 2 if word in _WITH_VALUE else 1
    return True


def _split(argv: list[str]) -> tuple[str | None, list[str], list[str]]:
    """(the command, the options before it, what follows it); (None, [], argv) when the
    line has no known command, or asks for help or the version before it."""
    index = 0
    while index < len(argv):
        word = argv[index]
        if word in _OWN:
            return None, [], argv
        if word == "--" or not word.startswith("-") or word == "-":
            break
        takes_value = word in _WITH_VALUE
        index += 2 if takes_value else 1
    if index < len(argv) and argv[index] in COMMANDS:
        return argv[index], argv[:index], argv[index + 1 :]
    return (argv[0] if argv else None), [], argv


def _option_name(word: str) -> str | None:
    if not word.startswith("-") or word == "-":
        return None  # an option's value
    if word.startswith("--"):
        return word.split("=", 1)[0]
    return word[:2]  # -mX is -m with X


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            choices: dict[str, argparse.ArgumentParser] = action.choices  # type: ignore[assignment]
            return choices.get(name)
    return None


class _Parser(argparse.ArgumentParser):
    """argparse with a suggestion for a misspelt option, command or choice."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}{_suggestion(self, message)}\n")


def _suggestion(parser: argparse.ArgumentParser, message: str) -> str:
    import difflib

    options, choices = _known(parser)
    unknown = re.match(r"unrecognized arguments: (.*)", message)
    if unknown:
        for word in unknown.group(1).split():
            name = _option_name(word)
            if name is None:
                continue
            close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
            if close:
                return f" (did you mean {close[0]}?)"
        return ""
    invalid = re.search(r"invalid choice: (['\"]?)(.*?)\1 \(choose from", message)
    if invalid:
        value = invalid.group(2)
        close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
        if close:
            return f" (did you mean {close[0]}?)"
        if " " in value:
            return f' (to run a task: codecoder exec "{value}")'
    return ""


def _known(parser: argparse.ArgumentParser) -> tuple[list[str], list[str]]:
    """Every option string and every choice of `parser` and its subcommands."""
    options: list[str] = []
    choices: list[str] = []
    for action in parser._actions:
        options += action.option_strings
        if isinstance(action, argparse._SubParsersAction):
            subparsers: dict[str, argparse.ArgumentParser] = action.choices  # type: ignore[assignment]
            choices += list(subparsers)
            for sub in subparsers.values():
                more_options, more_choices = _known(sub)
                options += more_options
                choices += more_choices
        elif action.choices is not None:
            choices += [str(choice) for choice in action.choices]
    return options, choices


def build_parser(first: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `first` (the command word) = "exec", only what `exec`
    parses, because registering the other commands imports their modules."""
    from codecoder import __version__

    parser = _Parser(
        prog="codecoder",
        description="A coding agent for the terminal. Without a command: an interactive "
        "session in this folder.",
    )
    parser.add_argument("--version", "-V", action="version", version=f"codecoder {__version__}")
    _agent_options(parser, approval=None)  # "ask" on a terminal, else exec's default
    _session_options(parser)
    _daemon_options(parser)
    parser.set_defaults(func=_interactive, task=None, json=False, stdin_replies=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("exec", help="run one task headless and print the answer")
    run.add_argument("task", nargs="?", help="the task, or - to read it from standard input")
    run.add_argument("--json", action="store_true", help="print one JSON event per line")
    run.add_argument(
        "--plan",
        metavar="PLAN.toml",
        help="run a plan's milestones, each checked by its gates (docs/plans.md); no TASK",
    )
    _agent_options(run, approval="never-ask")
    _session_options(run)
    run.add_argument(
        "--stdin-replies",
        action="store_true",
        help="with --json: read answers to questions as JSON lines on stdin",
    )
    run.set_defaults(func=_exec)
    if first == "exec":
        return parser

    resume = sub.add_parser("resume", help="continue a session interactively")
    resume.add_argument(
        "resume", nargs="?", metavar="ID", help="default: this folder's last (--pick: choose)"
    )
    resume.add_argument(
        "--pick",
        action="store_true",
        help="choose among this folder's sessions (title, age, turns, model; ↑↓, Enter; "
        "Esc cancels); needs a terminal",
    )
    _agent_options(resume, approval=None)
    _daemon_options(resume)
    resume.set_defaults(func=_interactive, continue_=False, task=None, json=False)

    demo = sub.add_parser("demo", help="replay a bundled session on an example project")
    demo.add_argument("--speed", type=float, default=1.0, help="replay speed factor")
    demo.add_argument("--keep", action="store_true", help="keep the example project copy")
    demo.set_defaults(func=_demo)
    if first == INTERACTIVE:
        return parser

    from codecoder.cli import (
        batch_cmd,
        daemon_cmd,
        prompt_cmd,
        provider_commands,
        replay_cmd,
        sessions_cmd,
        trace_cmd,
        trust_cmd,
    )

    faces = (provider_commands, sessions_cmd, prompt_cmd, trust_cmd, daemon_cmd)
    for module in (*faces, replay_cmd, trace_cmd, batch_cmd):
        module.add_parsers(sub)
    from codecoder.cli import hooks_cmd, mcp_cmd, undo_cmd

    for module in (mcp_cmd, hooks_cmd, undo_cmd):
        module.add_parsers(sub)
    return parser


APPROVAL_HELP = (
    "ask: what no rule allows is asked; "
    "auto-edit: edits inside the workspace are allowed, commands ask; "
    "full-auto: everything inside the workspace is allowed, the rest asks; "
    "read-only: only tools that read (other calls are denied); "
    "never-ask: what would ask is denied, with the reason"
)
"""Every mode in a line of `--help` (permissions/modes.py): a person choosing one on the
command line should not need the docs to know what each does."""


def _agent_options(parser: Any, *, approval: str | None) -> None:
    parser.add_argument("-m", "--model", help="PROVIDER/MODEL, e.g. openai/gpt-5")
    parser.add_argument("--script", help="replay a codecoder-script/1 file (offline)")
    parser.add_argument("-C", "--cwd", help="the workspace (default: the current folder)")
    default = f"default: {approval}" if approval else "default: ask on a terminal, else never-ask"
    parser.add_argument(
        "--approval",
        choices=APPROVAL_MODES,
        default=approval,
        metavar="MODE",
        help=f"{APPROVAL_HELP}; {default}",
    )
    parser.add_argument(
        "--max-rounds",
        type=int,
        default=100,
        metavar="N",
        help="stop a turn after N requests to the model (default 100)",
    )
    parser.add_argument("--trace", metavar="FILE", help="write every command and event as JSONL")
    parser.add_argument(
        "--trace-bodies", action="store_true", help="with --trace, each model request whole"
    )
    parser.add_argument(
        "--sandbox",
        choices=SANDBOX_MODES,
        help="confine commands with bubblewrap (docs/sandbox.md); default: [sandbox] mode, "
        "else workspace-write in full-auto where bubblewrap works",
    )


def _daemon_options(parser: Any) -> None:
    """The terminal client uses a running daemon (docs/acp.md) unless told not to."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--attach",
        nargs="?",
        const="",
        metavar="SESSION",
        help="attach to a live session of the daemon (default: this folder's latest)",
    )
    where.add_argument(
        "--no-daemon", action="store_true", help="run in this process even when a daemon runs"
    )


def _session_options(parser: Any) -> None:
    session = parser.add_mutually_exclusive_group()
    session.add_argument(
        "--continue",
        dest="continue_",
        action="store_true",
        help="continue the last session of this workspace",
    )
    session.add_argument("--resume", metavar="ID", help="continue the session ID")


class ExecOptions(msgspec.Struct, frozen=True):
    """`codecoder exec`."""

    agent: AgentOptions
    task: str
    json: bool = False
    stdin_replies: bool = False
    plan: str | None = None
    """A plan file: its milestones are the tasks (`task` is then empty)."""


class DemoOptions(msgspec.Struct, frozen=True):
    """`codecoder demo`."""

    speed: float = 1.0
    keep: bool = False


def agent_options(namespace: argparse.Namespace) -> AgentOptions:
    """The agent options of a parsed command line (`resume` without an ID continues)."""
    resume: str | None = getattr(namespace, "resume", None)
    continue_ = bool(getattr(namespace, "continue_", False))
    if getattr(namespace, "command", None) == "resume" and resume is None:
        continue_ = True
    return AgentOptions(
        model=namespace.model,
        script=namespace.script,
        cwd=namespace.cwd,
        approval=namespace.approval or "ask",
        max_rounds=namespace.max_rounds,
        trace=namespace.trace,
        trace_bodies=bool(getattr(namespace, "trace_bodies", False)),
        continue_=continue_,
        resume=resume,
        sandbox=getattr(namespace, "sandbox", None),
    )


def _interactive(namespace: argparse.Namespace) -> int:
    from codecoder.cli.repl import run_repl

    options = agent_options(namespace)
    pick = bool(getattr(namespace, "pick", False))
    if pick:
        if namespace.resume is not None or getattr(namespace, "attach", None) is not None:
            from codecoder.exitcodes import EXIT_USAGE

            clash = "give no ID with it" if namespace.resume is not None else "not with --attach"
            print(f"codecoder resume: error: --pick chooses the session: {clash}", file=sys.stderr)
            return EXIT_USAGE
        options = msgspec.structs.replace(options, continue_=False)  # nothing chosen yet
    return run_repl(
        options,
        attach=getattr(namespace, "attach", None),
        no_daemon=bool(getattr(namespace, "no_daemon", False)),
        approval_given=namespace.approval is not None,
        pick=pick,
    )


def _exec(namespace: argparse.Namespace) -> int:
    from codecoder.cli.headless import run_exec
    from codecoder.exitcodes import EXIT_USAGE

    if (namespace.task is None) == (namespace.plan is None):
        problem = (
            "give the TASK (or - to read it from standard input), or --plan FILE"
            if namespace.task is None
            else "--plan runs the plan's tasks: give no TASK with it"
        )
        print(f"codecoder exec: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    options = ExecOptions(
        agent_options(namespace),
        namespace.task or "",
        namespace.json,
        namespace.stdin_replies,
        plan=namespace.plan,
    )
    return run_exec(options)


def _demo(namespace: argparse.Namespace) -> int:
    from codecoder.cli.demo import run_demo

    return run_demo(DemoOptions(namespace.speed, namespace.keep))
