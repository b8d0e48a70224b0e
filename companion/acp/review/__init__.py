"""How an agent's change becomes a review: a permission request turned into the review of its
edits (review_gate.py, file_changes.py, edits.py), `fs/*` inside the window's folders (files.py), and
the writes the agent made without asking (unchecked.py)."""
