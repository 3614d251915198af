"""Checkpoints and undo (issue 18, items 3-5; docs/undo.md; ADR 0004).

Before a turn changes a file, what the file was is kept, and after, what it became:

- objects.py: the workspace's private object store, a git directory of our own under
  `$XDG_DATA_HOME/codecoder/checkpoints/` with its own index, never the user's `.git` or
  index, run with an environment no repository can reach into (no config, hooks,
  attributes, filters or fsmonitor of the repository or the user apply).
- record.py: `Checkpoints`, one per session, and `CheckpointedTool`, the wrapper that
  takes them around the tools that change files: `write_file` and `edit_file` keep the
  file before and after the call (a few µs of Python, no git); `run_command` snapshots
  the work tree (untracked files included, ignored ones left out) before and after the
  command, and keeps what differs. Each turn's changes are one row of the session store
  (`checkpoints`): the turn, its first message, every file's state before and after.
  Nothing is written when nothing changed. It is edge code: the kernel never sees it,
  and a replay (which runs no tool) never takes one.
- prune.py: the store kept bounded at a session's end: what no checkpoint and no
  snapshot of the work tree refers to is removed, and over `[undo] max_store_mb` the
  oldest checkpoints are forgotten (a file over `[undo] max_file_mb` is never stored).
- restore.py: undo and redo of a turn: the files put back as they were before it (or
  after it), never over a file changed since, which is refused by name; the diff of
  what is restored; and, `with_history`, the conversation rewound by forking the session
  before the turn.
"""
