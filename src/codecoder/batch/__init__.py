"""`codecoder batch`: many tasks, each in a fresh clone of its repository, on a local
pool of processes or on a Ray cluster (docs/batch.md).

    tasks      the tasks file: read and checked whole before anything runs (TaskSpec)
    workspace  the clone, the diff, and how git is kept from running anything of theirs
    launch     how a task's `codecoder exec` starts: forked from the zygote, or a subprocess
    zygote     the process that has imported exec and forks a copy per task (ADR 0005)
    runner     one task from clone to result (the same code on a Ray node)
    output     exec's JSONL folded into tokens, cost and gates
    results    the results file: one ResultLine per task, appended as tasks finish
    pool       the local pool: N tasks at a time, cancel, timeouts
    ray_runner the same tasks as Ray tasks (Ray is imported only there)
    progress   the progress line and the summary table

Importing this package imports nothing: `codecoder exec` and `--version` never load it,
and the zygote (`python -m codecoder.batch.zygote`) chooses its own imports.
"""
