"""The `codecoder` command: subcommands and the one place errors become exit codes.

Start-up time is measured (`codecoder --version` ≤ 50 ms): this module imports only `sys`;
the parser (cli.commands) and each subcommand import what they need when they run.
"""

from __future__ import annotations

import sys

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

APPROVAL_MODES = ("ask", "auto-edit", "full-auto", "read-only", "never-ask")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"]):
        from codecoder import __version__

        print(f"codecoder {__version__}")
        return EXIT_OK
    from codecoder.cli.commands import build_parser

    options = build_parser(args[0] if args else None).parse_args(args)
    return int(options.func(options))


if __name__ == "__main__":
    sys.exit(main())
