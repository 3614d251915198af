"""Wrappers: programs that run the command their later words name.

`env`, `sudo`, `nohup`, `timeout 5`, `flock LOCK`, `strace -o log` … run another
command. The parser (shell.py) makes that command one of its own, which deny rules, the
read-only list and full-auto all judge; a prefix rule for the wrapper alone does not
cover it (programs.py). One table and one unwrapping serve all of them, so they cannot
drift apart.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import NamedTuple

from codecoder.permissions.words import Word, program_name

MAX_WRAPPERS = 40
"""More wrappers in a row than this and we stop unwrapping and ask."""


class Wrapper(NamedTuple):
    takes_value: frozenset[str] = frozenset()
    """Options whose value is the next word (`-u root`)."""
    positionals: int = 0
    """Words of its own before the command (`timeout 5 cmd`: 1)."""
    chdir: frozenset[str] = frozenset()
    """Options that run the command in another folder (`env -C dir`)."""
    scripts: frozenset[str] = frozenset()
    """Options whose value is shell code (`flock -c 'cmd'`)."""
    writes: frozenset[str] = frozenset()
    """Options whose value is a file it writes (`strace -o log`)."""
    subcommand: str = ""
    """A word that must come first (`uv run cmd`)."""


def _opts(*names: str) -> frozenset[str]:
    return frozenset(names)


WRAPPERS: dict[str, Wrapper] = {
    "env": Wrapper(_opts("-u", "--unset", "-C", "--chdir"), chdir=_opts("-C", "--chdir")),
    "sudo": Wrapper(
        _opts("-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T")
        | {"--user", "--group", "--host", "--prompt", "--close-from", "--chdir"}
        | {"--role", "--type", "--other-user", "--command-timeout"},
        chdir=_opts("-D", "--chdir"),
    ),
    "doas": Wrapper(_opts("-u", "-C")),
    "command": Wrapper(),
    "builtin": Wrapper(),
    "busybox": Wrapper(),
    "toybox": Wrapper(),
    "exec": Wrapper(_opts("-a")),
    "nohup": Wrapper(),
    "time": Wrapper(_opts("-o", "--output", "-f", "--format"), writes=_opts("-o", "--output")),
    "nice": Wrapper(_opts("-n", "--adjustment")),
    "ionice": Wrapper(_opts("-c", "-n", "--class", "--classdata")),
    "timeout": Wrapper(_opts("-s", "--signal", "-k", "--kill-after"), 1),
    "stdbuf": Wrapper(_opts("-i", "-o", "-e", "--input", "--output", "--error")),
    "setsid": Wrapper(),
    "unbuffer": Wrapper(),
    "taskset": Wrapper(positionals=1),
    "chrt": Wrapper(positionals=1),
    "xargs": Wrapper(  # -i, -l, -e take an optional value, attached only
        _opts("-I", "-n", "-P", "-L", "-s", "-d", "-E", "-a")
        | {"--max-args", "--max-procs", "--max-lines", "--max-chars", "--delimiter"}
        | {"--eof", "--arg-file", "--process-slot-var", "--replace"}
    ),
    "flock": Wrapper(
        _opts("-w", "--timeout", "-E", "--conflict-exit-code", "-c", "--command"),
        1,
        scripts=_opts("-c", "--command"),
    ),
    "chroot": Wrapper(_opts("--userspec", "--groups"), 1),
    "unshare": Wrapper(
        _opts("-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd")
        | {"--propagation", "--map-user", "--map-group", "--setgroups"},
        chdir=_opts("-R", "--root", "-w", "--wd"),
    ),
    "strace": Wrapper(
        _opts("-e", "-o", "-p", "-P", "-s", "-u", "-a", "-b", "-E", "-I", "-O", "-S", "-X")
        | {"--output", "--attach", "--user", "--env", "--string-limit", "--trace-path"},
        writes=_opts("-o", "--output"),
    ),
    "ltrace": Wrapper(
        _opts("-o", "-e", "-p", "-u", "-n", "-s", "-a", "-A", "-D", "-F", "-l", "-x")
        | {"--output", "--library", "--config"},
        writes=_opts("-o", "--output"),
    ),
    "runuser": Wrapper(
        _opts("-u", "--user", "-g", "--group", "-G", "--supp-group", "-s", "--shell")
        | {"-w", "--whitelist-environment", "-c", "--command", "--session-command"},
        scripts=_opts("-c", "--command", "--session-command"),
    ),
    "su": Wrapper(
        _opts("-s", "--shell", "-g", "--group", "-G", "--supp-group")
        | {"-w", "--whitelist-environment", "-c", "--command", "--session-command"},
        1,
        scripts=_opts("-c", "--command", "--session-command"),
    ),
    "sg": Wrapper(_opts("-c"), 1, scripts=_opts("-c")),
    "setpriv": Wrapper(
        _opts("--reuid", "--regid", "--ruid", "--euid", "--rgid", "--egid", "--groups")
        | {"--pdeathsig", "--inh-caps", "--ambient-caps", "--bounding-set", "--securebits"}
        | {"--selinux-label", "--apparmor-profile", "--landlock-access", "--landlock-rule"}
        | {"--seccomp-filter"}
    ),
    "nsenter": Wrapper(_opts("-t", "--target", "-S", "--setuid", "-G", "--setgid")),
    "prlimit": Wrapper(_opts("-p", "--pid", "-o", "--output")),
    "coproc": Wrapper(),
    "numactl": Wrapper(_opts("-N", "-C", "-m", "-p", "-i", "-P")),
    "cgexec": Wrapper(_opts("-g")),
    "fakeroot": Wrapper(_opts("-l", "--lib", "--faked", "-s", "-i", "-b")),
    "faketime": Wrapper(_opts("-m", "-f"), 1),
    "catchsegv": Wrapper(),
    "valgrind": Wrapper(),
    "firejail": Wrapper(),
    "systemd-run": Wrapper(
        _opts("-u", "--unit", "-p", "--property", "-E", "--setenv", "-M", "--machine")
        | {"-H", "--host", "--description", "--slice", "--uid", "--gid", "--nice"}
        | {"--working-directory"},
        chdir=_opts("--working-directory"),
    ),
    "pkexec": Wrapper(_opts("--user")),
    "dbus-run-session": Wrapper(_opts("--config-file", "--dbus-daemon")),
    "xvfb-run": Wrapper(
        _opts("-n", "--server-num", "-f", "--auth-file", "-e", "--error-file", "-s")
        | {"--server-args", "-p", "--xauth-protocol", "-w", "--wait"}
    ),
    "torsocks": Wrapper(_opts("-u", "-p", "-a", "-P")),
    "proxychains": Wrapper(_opts("-f")),
    "proxychains4": Wrapper(_opts("-f")),
    "setarch": Wrapper(positionals=1),
    "linux32": Wrapper(),
    "linux64": Wrapper(),
    "eatmydata": Wrapper(),
    "chronic": Wrapper(),
    "uv": Wrapper(
        _opts("--with", "--python", "-p", "--project", "--directory", "--package")
        | {"--extra", "--group", "--env-file", "--index", "--from"},
        subcommand="run",
        chdir=_opts("--directory", "--project"),
    ),
    "poetry": Wrapper(_opts("-C", "--directory", "-P", "--project"), subcommand="run"),
    "pipenv": Wrapper(subcommand="run"),
    "pdm": Wrapper(subcommand="run"),
    "rye": Wrapper(subcommand="run"),
    "conda": Wrapper(_opts("-n", "--name", "-p", "--prefix", "--cwd"), subcommand="run"),
    "bundle": Wrapper(subcommand="exec"),
    "direnv": Wrapper(subcommand="exec", positionals=1),
}
"""Options not listed are taken as flags without a value; `--opt=value` always works."""


class Unwrapped(NamedTuple):
    """A command seen through its wrappers."""

    views: tuple[tuple[Word, ...], ...]
    """argv, then in turn what each wrapper runs (`sudo env rm x`: three views)."""
    certain: bool
    """False when a wrapper's own word is only known at run time (`timeout $T cmd`: `$T`
    may split into several words), so what it runs is a guess."""
    chdir: bool
    """A wrapper runs the command in another folder (`env -C dir`, `sudo -D dir`)."""

    @property
    def argv(self) -> tuple[Word, ...]:
        """What finally runs, with every wrapper stripped."""
        return self.views[-1]

    @property
    def name(self) -> str | None:
        """The final command's name without its folder; None when only known at run time."""
        return program_name(self.views[-1])


class Step(NamedTuple):
    argv: tuple[Word, ...]
    certain: bool
    chdir: bool
    start: int
    """Where the wrapped command starts in the wrapper's argv."""
    scripts: tuple[Word, ...] = ()
    writes: tuple[Word, ...] = ()
    variables: tuple[Word, ...] = ()
    """`NAME=value` words the wrapper sets for the command (`env GIT_PAGER=… git`)."""


def unwrap(argv: Sequence[Word]) -> Unwrapped:
    views = [tuple(argv)]
    certain, chdir = True, False
    for _ in range(MAX_WRAPPERS):
        step = unwrap_one(views[-1])
        if step is None or not step.argv:
            return Unwrapped(tuple(views), certain, chdir)
        views.append(step.argv)
        certain, chdir = certain and step.certain, chdir or step.chdir
    return Unwrapped(tuple(views), False, chdir)


def unwrap_one(argv: tuple[Word, ...]) -> Step | None:
    """What the leading wrapper of `argv` runs, or None when `argv` is not wrapped."""
    name = program_name(argv)
    spec = WRAPPERS.get(name) if name is not None else None
    if spec is None or name is None:
        return None
    rest = argv[1:]
    offset = 1
    if spec.subcommand:
        if not rest or rest[0].expands or rest[0].text != spec.subcommand:
            return None
        rest, offset = rest[1:], 2
    index, certain, chdir = 0, True, False
    scripts: list[Word] = []
    writes: list[Word] = []
    variables: list[Word] = []
    positionals = spec.positionals
    while index < len(rest):
        word = rest[index]
        text = word.text
        if word.expands or not text.startswith("-") or text == "-":
            if name == "env" and not word.expands and "=" in text and not text.startswith("-"):
                variables.append(word)
                index += 1
                continue
            if positionals == 0:
                break
            certain = certain and not word.expands  # `timeout $T cmd`: $T may be words
            positionals -= 1
            index += 1
            continue
        if text == "--":
            index += 1
            break
        inline = _split_option(text) if name == "env" else None
        if inline is not None:
            step = _split_string(inline, rest[index + 1 :], chdir)
            return None if step is None else step._replace(start=offset + index)
        width, option = _option(text, spec)
        chdir = chdir or option in spec.chdir
        value = _option_value(text, rest, index, width)
        if width == 2 and index + 1 < len(rest):
            certain = certain and not rest[index + 1].expands
        if value is not None and option in spec.scripts:
            scripts.append(value)
        if value is not None and option in spec.writes:
            writes.append(value)
        index += width
    for word in rest[index : index + positionals]:  # after `--`: still its own words
        certain = certain and not word.expands
    start = offset + index + positionals
    return Step(
        argv[start:], certain, chdir, start, tuple(scripts), tuple(writes), tuple(variables)
    )


def _option(text: str, spec: Wrapper) -> tuple[int, str]:
    """How many words the option `text` spans (2 when its value is the next word), and
    the option's full name. Short options may be clustered (`-iu NAME`, `-uNAME`); long
    ones abbreviated (`--unset` as `--uns`)."""
    if text.startswith("--"):
        option = text.split("=", 1)[0]
        names = [name for name in spec.takes_value if name.startswith("--")]
        full = next((name for name in names if name.startswith(option) and len(option) > 2), None)
        if full is None:
            return 1, option
        return (2 if "=" not in text else 1), full
    for offset, letter in enumerate(text[1:], start=1):
        option = f"-{letter}"
        if option in spec.takes_value:
            return (1 if offset < len(text) - 1 else 2), option
    return 1, text


def _option_value(text: str, rest: tuple[Word, ...], index: int, width: int) -> Word | None:
    """The value of the option at `rest[index]`: the next word, or attached to it."""
    if width == 2:
        return rest[index + 1] if index + 1 < len(rest) else None
    if text.startswith("--"):
        return Word(text.split("=", 1)[1]) if "=" in text else None
    return Word(text[2:]) if len(text) > 2 else None


def _split_option(text: str) -> str | None:
    """For env's `-S STRING` (also `-vS`, `-SSTRING`, `--split-string=STRING`, `--sp`):
    the string when attached to the option, "" when it is the next word; None for
    another option."""
    if text.startswith("--"):
        option, _, value = text.partition("=")
        return value if len(option) > 2 and "--split-string".startswith(option) else None
    if not text.startswith("-"):
        return None
    for offset, letter in enumerate(text[1:], start=1):
        if letter == "S":
            return text[offset + 1 :]
        if f"-{letter}" in WRAPPERS["env"].takes_value:
            return None
    return None


def _split_string(inline: str, rest: tuple[Word, ...], chdir: bool) -> Step | None:
    """`env -S 'cmd args'`: the string is split into the command's words. env does its
    own `${VAR}` expansion and backslash escapes (`\\_` is a space), so a string with
    `$` or a backslash is only known at run time."""
    if not inline and not rest:
        return None
    text = Word(inline) if inline else rest[0]
    after = rest if inline else rest[1:]
    if text.expands or "\\" in text.text:
        return Step((Word(text.text, expands=True), *after), False, chdir, 0)
    try:
        words = [Word(word, expands="$" in word) for word in shlex.split(text.text)]
    except ValueError:
        return Step((Word(text.text, expands=True), *after), False, chdir, 0)
    return Step((*words, *after), True, chdir, 0) if words or after else None
