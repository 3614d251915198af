"""The agent kernel: vocabulary, ports, primitives and the turn loop.

Nothing in this package imports providers, tools, permissions, sessions, the daemon or the
CLI (DESIGN.md invariant 7): the edge wires concrete implementations into an AgentLoop.
"""
