"""The change-set tab (every file a turn changed, each opening the split review against its
checkpoint) and where a change set comes from. Above the adapter's base (sublime_editor/*.py)."""
