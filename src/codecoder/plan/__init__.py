"""Plans: milestones run in order by one agent, each checked by gates that run one after
another (`codecoder exec --plan PLAN.toml`, docs/plans.md).

- `spec`: the plan file, read and checked whole (PlanError: one line, exit code 2).
- `events`: what a plan run reports between the agent's own events.
- `runner`: PlanRunner, the milestone progression on a worker thread of its own; it
  talks to the agent only through the command and event channels, and any face drives
  it by reading one event stream (the kernel gains nothing plan-specific).
- `feedback`: what the model is told (a milestone's task, a failed gate's report).
- `progress`: the run's progress in the session store, for `--continue`.

Import from the modules: `exec` loads `events` for its JSON lines at every start, and
nothing more of a plan unless `--plan` is given.
"""
