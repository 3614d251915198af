"""Concrete tools (implement kernel.ports.Tool)."""
