"""The agents a chat can start: the presets and the `agents` setting (agents.py), the ACP registry
(registry.py, with the snapshot shipped for offline use), the agent process and its tree (process.py),
and the built-in demo agent (a program of its own: the SDK's agent side)."""
