"""A chat's past: its checkpoints, Restore checkpoint and Rewind to Here, the last session per folder
and agent (memory.py), and Chat History's past sessions (past.py)."""
