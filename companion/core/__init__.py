"""The core every room shares, free of any agent protocol and of sublime: it imports no room and
nothing above the rooms, only the standard library and pinned libraries
(`tests/project/test_structure.py` checks). Floors, bottom up:

- `system/`: processes and their trees, the user's paths and cache, private folders (nothing else).
- `files/`: the path policy and the safe file I/O (imports system/).
- The editor as rooms see it, here: `editor.py` (the `Editor` port), `reviews.py` (`Reviews`: every
  agent's proposed edit ends there), `context.py`, `tool_calls.py`, `write_notes.py`,
  `troubleshooting.py` (imports files/).
- `history/`: a turn's checkpoints, change sets, restores and turns (files/ only; never the server).
- `server/`: the window's server and its guards (the model and files/; never history/).
"""
