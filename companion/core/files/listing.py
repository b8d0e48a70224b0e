"""`list_files`: the window's folders' files, as paths relative to their folder.

One `os.scandir` per folder, entries sorted by name, folders pruned as soon as an exclude pattern or
`.gitignore` rule says so (nothing below an excluded folder is looked at). Symbolic links to folders
are not followed (no loops, no escapes); a symbolic link to a file is listed only when its target
is inside the workspace. Paths use "/" on every platform.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field

from .paths import PathPolicy, Resolved, is_inside
from .patterns import Exclusions, GitIgnore


@dataclass
class Listing:
    entries: list[str] = field(default_factory=list)
    truncated: bool = False
    limit: int = 0

    def text(self) -> str:
        if not self.entries and not self.truncated:
            return "(no files)"
        lines = list(self.entries)
        if self.truncated:
            lines.append(
                f"[truncated: only the first {self.limit} entries are listed (list_files limit); "
                "list a sub-folder with the `path` argument, or use recursive=false, to see the rest]"
            )
        return "\n".join(lines)


@dataclass(frozen=True)
class ListOptions:
    recursive: bool = True
    limit: int = 10_000
    folder_excludes: Sequence[str] = ()
    file_excludes: Sequence[str] = ()
    use_gitignore: bool = True


class _Limit(Exception):
    pass


def list_files(policy: PathPolicy, options: ListOptions, start: Resolved | None = None) -> Listing:
    """List every folder of `policy` (or only `start`, a folder inside one of them)."""
    listing = Listing(limit=options.limit)
    walker = _Walker(policy, options, listing)
    several = len(policy.folders) > 1
    try:
        if start is not None:
            index = policy.real_folders.index(start.folder)
            prefix = policy.labels[index] + "/" if several else ""
            walker.walk_folder(policy.real_folders[index], start.path, prefix)
        else:
            for folder, label in zip(policy.real_folders, policy.labels, strict=True):
                walker.walk_folder(folder, folder, label + "/" if several else "")
    except _Limit:
        listing.truncated = True
    return listing


class _Walker:
    def __init__(self, policy: PathPolicy, options: ListOptions, listing: Listing) -> None:
        self.policy = policy
        self.options = options
        self.listing = listing
        self.exclusions = Exclusions(
            options.folder_excludes, options.file_excludes, options.use_gitignore, skip_git=False
        )

    def add(self, entry: str) -> None:
        entries = self.listing.entries
        if len(entries) >= self.options.limit:
            raise _Limit
        entries.append(entry)

    def walk_folder(self, root: str, start: str, prefix: str) -> None:
        """Walk `start` (the folder `root` or a folder inside it); entries are printed as `prefix` + relative path."""
        ignore, repo_prefix = self.exclusions.start(start)
        rel = os.path.relpath(start, root)
        rel = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        self._walk(start, rel, prefix, ignore, repo_prefix, first=True)

    def _walk(self, folder: str, rel: str, prefix: str, ignore: GitIgnore | None, repo_rel: str, first: bool) -> None:
        """`rel`: folder-relative path of `folder` ("" or ending with "/"); `repo_rel` likewise in its repository."""
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return  # unreadable folder: skip it, like a file manager would
        if not first and self.options.use_gitignore:
            ignore, repo_rel = self.exclusions.entering(folder, {e.name for e in entries}, ignore, repo_rel)
        excluded = self.exclusions.excluded
        subfolders: list[tuple[os.DirEntry[str], str]] = []
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_link = not is_dir and entry.is_symlink()
            except OSError:
                continue
            if is_dir:
                if excluded(name, entry.path, rel, True, ignore, repo_rel):
                    continue
                if self.options.recursive:
                    subfolders.append((entry, name))
                else:
                    self.add(prefix + rel + name + "/")
                continue
            if is_link and not self._link_target_is_file_inside(entry.path):
                continue
            if not is_link:
                try:
                    if not entry.is_file(follow_symlinks=False):
                        continue  # FIFOs, sockets, devices
                except OSError:
                    continue
            if excluded(name, entry.path, rel, False, ignore, repo_rel):
                continue
            self.add(prefix + rel + name)
        for entry, name in subfolders:
            self._walk(entry.path, rel + name + "/", prefix, ignore, repo_rel + name + "/", first=False)

    def _link_target_is_file_inside(self, path: str) -> bool:
        try:
            real = os.path.realpath(path)  # raises before Python 3.13 if the link is swapped meanwhile
            if not stat.S_ISREG(os.stat(real).st_mode):
                return False
        except OSError:
            return False
        return any(is_inside(real, folder) for folder in self.policy.real_folders)
