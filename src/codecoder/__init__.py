"""CodeCoder: a coding agent for the terminal on an event-driven, thread-based kernel."""

__version__ = "0.1.0"
