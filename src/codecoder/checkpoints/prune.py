"""Keeping a workspace's object store bounded (docs/undo.md, "How big the store gets").

Every snapshot adds objects; most are referred to by no checkpoint for long: a file a
command wrote and the next deleted, the state of every file between two commands. What
a checkpoint refers to is the blob ids of its rows in the session store (before and
after of each file); what the next snapshot needs is what our index holds (the work tree
as it was last seen, the "before" of the next command). Everything else goes:

- the blobs of the rows are gathered into one tree (`git mktree`), which `refs/keep`
  names, so git itself sees them as reachable;
- `git repack -a -d` writes what is reachable from that ref and from our index into one
  pack and drops the rest of the packs (a file over `core.bigFileThreshold` had a pack of
  its own), and `git prune --expire=now` removes the loose objects nothing reaches.

Then, over `max_store`, the oldest checkpoints (of every session of the workspace) are
forgotten, as many as it takes, and the store pruned again; the index's objects are
never dropped, so a work tree larger than the cap keeps a store larger than the cap.

A prune runs only when the store is alone (`ObjectStore.pruning`): a snapshot or a file
tool of any session holds it in use from its first object until its row is saved, and
a prune then waits for the next session's end. It runs at a session's end, when the store
has grown past twice its size after the last prune (and `SLACK` more) or over its cap, so
the work of repacking, proportional to the store, is paid once per doubling. The git
runs as every git of the store does (objects.py): no config, hook or attribute of the
user or the repository.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from codecoder.checkpoints.objects import MB, ObjectStore
from codecoder.checkpoints.record import decode_changes
from codecoder.sessions import SessionStore
from codecoder.sessions.records import CheckpointRow

SLACK = 16 * MB
"""Growth below this never starts a prune (a small store grows by whole files)."""
PRUNED = "pruned-size"
"""The store's size after its last prune (bytes, in decimal)."""
KEEP_REF = "refs/keep"


def size_of(folder: Path) -> int:
    """Bytes of the files under `folder` (0 when it does not exist)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def tidy(objects: ObjectStore, store: SessionStore, max_store: int) -> int | None:
    """At a session's end: prune when the store grew enough since the last prune, or is
    over `max_store`; returns its size after, or None when it did not run."""
    if not (objects.dir / "HEAD").exists():
        return None
    size = size_of(objects.dir)
    last = _last_pruned(objects)
    if size <= max_store and size <= max(2 * last, last + SLACK):
        return None
    return prune(objects, store, max_store)


def prune(objects: ObjectStore, store: SessionStore, max_store: int) -> int | None:
    """Remove what no checkpoint refers to; over `max_store`, forget the oldest
    checkpoints until it fits. Returns the size after, or None (the store is in use)."""
    with objects.pruning() as alone:
        if not alone:
            return None
        with objects.locked():
            rows = _rows(objects, store)
            size = _keep_only(objects, _blobs(rows))
            if size > max_store:
                dropped = _oldest_over(objects, rows, size, max_store)
                if dropped:
                    store.forget_checkpoints([row.id for row in dropped])
                    gone = {row.id for row in dropped}
                    rows = [row for row in rows if row.id not in gone]
                    size = _keep_only(objects, _blobs(rows))
            (objects.dir / PRUNED).write_text(f"{size}\n")
            return size


def _rows(objects: ObjectStore, store: SessionStore) -> list[CheckpointRow]:
    here = os.path.realpath(objects.dir)
    rows = store.checkpoints(workspace=objects.workspace)
    return [row for row in rows if os.path.realpath(row.store) == here]


def _blobs(rows: Iterable[CheckpointRow]) -> set[str]:
    found: set[str] = set()
    for row in rows:
        for change in decode_changes(row.files):
            found.update(s.sha for s in (change.before, change.after) if s is not None)
    return found


def _keep_only(objects: ObjectStore, blobs: set[str]) -> int:
    """Keep `blobs` and what the index refers to, nothing else; the size after."""
    sizes = _disk_sizes(objects, blobs)
    entries = "".join(f"100644 blob {sha}\t{sha}\n" for sha in sorted(sizes))
    tree = objects.git("mktree", input=entries.encode()).stdout.decode().strip()
    objects.git("update-ref", KEEP_REF, tree)
    objects.git("repack", "-a", "-d", "-q", "-n")
    objects.git("prune", "--expire=now")
    objects.discard_temporaries()
    return size_of(objects.dir)


def _disk_sizes(objects: ObjectStore, blobs: Iterable[str]) -> dict[str, int]:
    """Each blob the store has, with the bytes it takes there (a missing one is left
    out: a damaged store is said by undo, not hidden by a failed prune)."""
    wanted = "".join(f"{sha}\n" for sha in blobs)
    if not wanted:
        return {}
    answer = objects.git(
        "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize:disk)",
        input=wanted.encode(),
    )  # fmt: skip
    sizes: dict[str, int] = {}
    for line in answer.stdout.decode().splitlines():
        fields = line.split(" ")
        if len(fields) == 3 and fields[1] == "blob":
            sizes[fields[0]] = int(fields[2])
    return sizes


def _oldest_over(
    objects: ObjectStore, rows: Sequence[CheckpointRow], size: int, max_store: int
) -> list[CheckpointRow]:
    """The oldest checkpoints whose forgetting brings the store to `max_store` (all of
    them when even that does not)."""
    indexed = _indexed(objects)
    per_row = {row.id: _blobs([row]) for row in rows}
    users: dict[str, int] = {}
    for shas in per_row.values():
        for sha in shas:
            users[sha] = users.get(sha, 0) + 1
    sizes = _disk_sizes(objects, users)
    dropped: list[CheckpointRow] = []
    for row in sorted(rows, key=lambda row: (row.created_at, row.id)):
        if size <= max_store:
            break
        dropped.append(row)
        for sha in per_row[row.id]:
            users[sha] -= 1
            if users[sha] == 0 and sha not in indexed:
                size -= sizes.get(sha, 0)
    return dropped


def _indexed(objects: ObjectStore) -> set[str]:
    listed = objects.git("ls-files", "-s", "-z").stdout
    return {entry.split(b" ")[1].decode() for entry in listed.split(b"\0") if entry}


def _last_pruned(objects: ObjectStore) -> int:
    try:
        return int((objects.dir / PRUNED).read_text())
    except (OSError, ValueError):
        return 0
