"""The core every room shares, free of any agent protocol: it imports no room and nothing above
the rooms (`tests/project/test_structure.py` checks), only the standard library and pinned libraries.

- The window's server: `window_server.py` (the socket, uvicorn, `Reviews`, the context debounce; it
  mounts the rooms), the shapes rooms and window meet through (`window.py`), the socket's guards
  (`security.py`, `connections.py`, `ws_protocol.py`, `request_ids.py`, `rate_limited.py`,
  `loopback.py`).
- The editor as rooms see it: `editor.py` (the `Editor` port), `context.py`, `diffs.py` (`Reviews`:
  every agent's proposed edit ends there), `tool_calls.py`, `uris.py`.
- Files: the path policy (`paths.py`, `patterns.py`, `fdpath.py`) and the safe file I/O
  (`reading.py`, `writing.py`, `textfile.py`, `disk_text.py`, `listing.py`); token-bearing files
  (`token_files.py`, `private_dirs.py`).
- Processes: `processes.py`, `process_tree.py`, `user_paths.py`, `windows_shim.py`, `pywin32_path.py`;
  what the core knows of Gemini CLI's own files (`gemini_trust.py`) and of the README
  (`troubleshooting.py`).

A turn's checkpoints and change sets (the ACP room and the terminal agents both use them):
`checkpoints.py` (what a folder held, incrementally), `checkpoint_store.py` (the private content
store), `change_set.py` (what a turn changed), `restore.py` (revert a file, restore a checkpoint),
`turns.py` and `turn_writes.py` (a chat's turns and what its agent wrote through us), `user_cache.py`.
"""
