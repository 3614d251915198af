"""A failure the sandbox may have caused, said to the model so it can ask to escalate.

Read from the output of a command that failed: "Read-only file system" (EROFS: a write
outside the writable places, or into `.git`, `.codecoder`, a git-shaped folder),
"Permission denied" naming a masked place (EACCES), a path of the host's /tmp that the
sandbox's own /tmp does not have, and, with the network off, the ways programs say a
host cannot be reached or that nothing listens (on the sandbox's own localhost). The
hint names what the sandbox blocks and how to ask for more (`sandbox: false`, which the
user is asked to allow, or, where nobody can allow it, doing without; for a hook, which
is the user's own command, the hook's `sandbox = false`). It is a hint, not a
diagnosis: a command may fail for those reasons outside a sandbox too; but each sign is
matched only where it means that failure (tests/sandbox/test_hints.py holds the
look-alikes: `ModuleNotFoundError` is no name lookup).

A command that reached the process limit (`limit_hint`) is told so whether it failed or
not: for sure where the limit is a cgroup (its `pids.events`), else when its output
shows a fork or a thread that failed with EAGAIN (the limit's error).
"""

from __future__ import annotations

import os
import re

from codecoder.sandbox.bwrap import Confinement

_TMP_PATH = re.compile(r"/tmp/[^\s:'\"`,;()]+")

NETWORK_SIGNS = re.compile(
    "|".join(
        (
            r"network is unreachable",
            r"network unreachable",
            r"could not resolve host",  # curl, git
            r"unable to resolve host address",  # wget
            r"temporary failure in name resolution",
            r"name or service not known",
            r"no address associated with hostname",
            r"failed to establish a new connection",  # urllib3, pip
            r"\bgetaddrinfo\b",
            r"\beai_again\b",
            r"\benotfound\b",  # npm; a word: "ModuleNotFoundError" holds "enotfound"
        )
    )
)
"""How programs say a host cannot be reached. Error codes are matched as whole words:
as substrings they occur inside the names of unrelated errors."""

REFUSED_SIGNS = re.compile(r"connection refused|\beconnrefused\b|couldn't connect to server")
"""How programs say nothing listens: without the network that is a loopback address (a
remote one is unreachable), the sandbox's own, where the host's servers are not."""

_ASK = (
    "If the command needs it, run it again with `sandbox: false` (the user is asked "
    "first) or do without it."
)
_NOBODY_TO_ASK = (
    "Nobody can allow more in this run (`sandbox: false` would be refused): do without "
    "it, and say in your answer what could not run."
)


def failure_hint(
    output: str,
    confinement: Confinement,
    masked: tuple[str, ...] = (),
    *,
    remedy: str | None = None,
) -> str | None:
    """One line for the model when `output` (of a command that failed) shows a write,
    read or connection the sandbox blocks; None when nothing points to the sandbox.
    `masked` are the hidden places (real paths); `remedy` says how to get more (a
    hook's line is for the user, who alone can take it out: hooks/runner.py). By
    default it is to ask for `sandbox: false` where someone could allow it
    (`confinement.escalation`), else to do without: a hint must not send the model
    after a call that is refused."""
    if remedy is None:
        remedy = _ASK if confinement.escalation else _NOBODY_TO_ASK
    text = output.lower()
    if "read-only file system" in text:
        if confinement.reads_only:
            return (
                "[sandbox: the write was blocked; this command line looked read-only "
                "(programs of the read-only list only), so it ran with only /tmp writable. "
                f"{remedy}]"
            )
        where = (
            "the workspace (but not .git, .codecoder or folders shaped like a git "
            "directory) and /tmp"
            if confinement.mode == "workspace-write"
            else "only /tmp (read-only mode)"
        )
        return f"[sandbox: the write was blocked; commands may write {where}. {remedy}]"
    if "permission denied" in text and _names_masked(output, masked):
        return (
            "[sandbox: credential folders (~/.ssh, ~/.aws, CodeCoder's config …) are "
            f"hidden from commands. {remedy}]"
        )
    if ("no such file" in text or "nonexistent" in text) and _hosts_tmp(output, confinement):
        return (
            "[sandbox: /tmp is the sandbox's own (it lasts for the session); the host's "
            f"/tmp outside the workspace is not there. {remedy}]"
        )
    if confinement.network:
        return None
    if NETWORK_SIGNS.search(text):
        return (
            "[sandbox: the network is off for commands (the user can allow it for some "
            f"commands with [sandbox] network_allow). {remedy}]"
        )
    if REFUSED_SIGNS.search(text):
        return (
            "[sandbox: commands have their own localhost, without the network: a server "
            "running on the host is not reachable; one this same command starts is. "
            f"{remedy}]"
        )
    return None


_FORK_FAILED = re.compile(
    r"(?:fork|spawn|pthread_create|thread).*(?:resource temporarily unavailable|eagain)"
    r"|(?:cannot|can't) fork",
    re.IGNORECASE,
)


def limit_hint(output: str, confinement: Confinement, *, reached: bool = False) -> str | None:
    """The line for a command that reached the process limit, None otherwise. Where the
    limit is a cgroup, `reached` (its count) alone decides; where it is an rlimit, a
    line of the output that says a fork or a thread failed with EAGAIN."""
    limit = confinement.limit
    if limit is None:
        return None
    if not reached and (limit.how == "cgroup" or _FORK_FAILED.search(output) is None):
        return None
    return (
        f"[sandbox: a command may have at most {limit.count:,} processes and threads at "
        "once ([sandbox] max_processes); this one reached that, so starting another failed "
        "(what was still running was stopped when the command ended). Start fewer at a "
        "time (a smaller -j, fewer workers).]"
    )


def _hosts_tmp(output: str, confinement: Confinement) -> bool:
    """Whether the output names a path of the host's /tmp (outside the writable roots)
    that exists there: the command looked for it in the sandbox's /tmp."""
    roots = confinement.roots()
    for found in _TMP_PATH.findall(output):
        path = found.rstrip(".")
        inside = any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)
        parent = os.path.dirname(path)
        if inside:
            continue
        if os.path.lexists(path) or (parent != "/tmp" and os.path.isdir(parent)):
            return True
    return False


def _names_masked(output: str, masked: tuple[str, ...]) -> bool:
    home = os.path.expanduser("~")
    for path in masked:
        forms = [path]
        if path.startswith(home + "/"):
            relative = path[len(home) + 1 :]
            forms += ["~/" + relative, "$HOME/" + relative, relative]
        if any(form in output for form in forms):
            return True
    return False
