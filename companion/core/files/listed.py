"""Whether `list_files` would list one path: the same exclusions (the Sublime folder and file
patterns, `.gitignore`), decided for that path alone by looking only at the folders above it, not
by walking the workspace. Used where a single file is named (an `@path` in a chat prompt)."""

from __future__ import annotations

import os

from .listing import ListOptions
from .patterns import Exclusions

# What `Exclusions.entering` looks for in a folder's listing: a nested repository, or its own rules.
_MARKERS = (".git", ".gitignore")


def left_out(options: ListOptions, folder: str, path: str) -> bool:
    """True when a walk of `folder` with `options` leaves out `path` (a real path inside the real
    folder `folder`), or a folder on the way to it."""
    rel_path = os.path.relpath(path, folder)
    if rel_path == os.curdir:
        return False
    parts = rel_path.split(os.sep)
    exclusions = Exclusions(options.folder_excludes, options.file_excludes, options.use_gitignore, skip_git=False)
    ignore, repo_rel = exclusions.start(folder)
    current, rel = folder, ""
    for index, name in enumerate(parts):
        if index > 0 and options.use_gitignore:  # the walk entered `current`: its own rules apply below it
            present = {m for m in _MARKERS if os.path.lexists(os.path.join(current, m))}
            ignore, repo_rel = exclusions.entering(current, present, ignore, repo_rel)
        entry = os.path.join(current, name)
        is_dir = index < len(parts) - 1 or os.path.isdir(entry)
        if exclusions.excluded(name, entry, rel, is_dir, ignore, repo_rel):
            return True
        current, rel, repo_rel = entry, rel + name + "/", repo_rel + name + "/"
    return False
