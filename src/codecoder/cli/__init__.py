"""Clients of the kernel: the command line, headless runner and demo."""
