"""The composition root: where concrete providers, tools, policies, the session store,
the prompt and the compactor meet an AgentLoop.

Every face builds its agents here: the terminal client and headless `exec` (cli/), the
daemon and ACP over stdio (daemon/). The kernel knows none of these (invariant 7), this
package imports no face, and the faces import nothing of each other.
"""
