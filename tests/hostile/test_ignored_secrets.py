"""A secret that git ignores never reaches the checkpoint store (issue 37, P4-P7): the README says
the checkpoints honour the rules git does. Each test plants a secret that `git status` would never
show, takes a checkpoint as a chat does, and searches the whole store for the secret's bytes.

The user's git config and global excludes live in a scratch HOME / XDG_CONFIG_HOME (`home`)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from companion.core.history.checkpoint_store import CheckpointStore
from companion.core.history.checkpoints import Checkpoint, Checkpointer
from tests.core.history.test_checkpoints import write

SECRET = b"API_KEY=sk-live-7f3a9c-never-copy-me\n"
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and inotify are POSIX")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the folder watch is Linux only")


@pytest.fixture
def home(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A user with no git config and no global excludes yet."""
    path = os.path.realpath(os.path.join(str(tmp_path), "home"))
    os.makedirs(path)
    monkeypatch.setenv("HOME", path)
    monkeypatch.setenv("USERPROFILE", path)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    return path


@pytest.fixture
def repo(tmp_path: Any, home: str) -> str:
    """A repository (a `.git` folder, as `git init` leaves it) with one file everyone may see."""
    path = os.path.realpath(os.path.join(str(tmp_path), "repo"))
    os.makedirs(os.path.join(path, ".git", "info"))
    write(os.path.join(path, "app.py"), "print('hello')\n")
    return path


def stored_bytes(store: CheckpointStore) -> Iterator[bytes]:
    for folder, _dirs, files in os.walk(store.root):
        for name in files:
            with open(os.path.join(folder, name), "rb") as handle:
                yield handle.read()


def checkpoint(ws: str, tmp_path: Any) -> tuple[Checkpoint, CheckpointStore]:
    store = CheckpointStore(os.path.join(str(tmp_path), "cache"), [ws])
    return Checkpointer(store, [ws]).take(), store


def assert_secret_kept_out(ws: str, tmp_path: Any, secret_path: str) -> None:
    point, store = checkpoint(ws, tmp_path)
    assert os.path.join(ws, "app.py") in point.entries  # the checkpoint did run
    assert secret_path not in point.entries
    assert not any(SECRET in blob for blob in stored_bytes(store)), "the ignored secret was copied into the store"


def test_a_gitignore_saved_with_a_byte_order_mark_keeps_its_first_rule(repo: str, tmp_path: Any) -> None:
    """P4: Notepad saves `.gitignore` with a UTF-8 BOM; git skips it and ignores `.env`."""
    write(os.path.join(repo, ".gitignore"), "\ufeff.env\n".encode())
    secret = write(os.path.join(repo, ".env"), SECRET)
    assert_secret_kept_out(repo, tmp_path, secret)


@pytest.mark.parametrize(
    ("rule", "name"),
    [
        ("key[[:digit:]].pem", "key1.pem"),
        ("[[:upper:]][[:upper:]]_SECRET", "AB_SECRET"),
        ("id_[[:alnum:]]*", "id_rsa"),
        ("token[![:space:]]txt", "token.txt"),
    ],
)
def test_a_rule_with_a_posix_class_is_honoured(repo: str, tmp_path: Any, rule: str, name: str) -> None:
    """P5: `[[:digit:]]` and its kin are git's POSIX classes."""
    write(os.path.join(repo, ".gitignore"), rule + "\n")
    secret = write(os.path.join(repo, name), SECRET)
    assert_secret_kept_out(repo, tmp_path, secret)


@pytest.mark.parametrize("line_end", ["\r\n", "\n"])
def test_escapes_and_line_ends_as_git_reads_them(repo: str, tmp_path: Any, line_end: str) -> None:
    """A CRLF rule file (a Windows checkout), `\\#` and `\\!` escapes, an escaped trailing space, `**`
    with three stars, and a nested .gitignore that re-includes nothing it must not."""
    rules = ["\\#notes", "\\!important", "trailing\\ ", "deep/***/*.key", "!app.py"]
    write(os.path.join(repo, ".gitignore"), line_end.join(rules) + line_end)
    write(os.path.join(repo, "sub", ".gitignore"), "private/" + line_end)
    secrets = [
        write(os.path.join(repo, "#notes"), SECRET),
        write(os.path.join(repo, "!important"), SECRET),
        write(os.path.join(repo, "trailing "), SECRET),
        write(os.path.join(repo, "deep", "a", "b", "c.key"), SECRET),
        write(os.path.join(repo, "sub", "private", "x.txt"), SECRET),
    ]
    for secret in secrets:
        assert_secret_kept_out(repo, tmp_path, secret)


def make_worktree(tmp_path: Any, main: str) -> str:
    """What `git worktree add ../wt` leaves: `.git` a file naming `main/.git/worktrees/wt`, whose
    `commondir` names the main repository's git folder (where `info/exclude` lives)."""
    wt = os.path.realpath(os.path.join(str(tmp_path), "wt"))
    admin = os.path.join(main, ".git", "worktrees", "wt")
    write(os.path.join(admin, "commondir"), "../..\n")
    write(os.path.join(admin, "gitdir"), os.path.join(wt, ".git") + "\n")
    write(os.path.join(admin, "HEAD"), "ref: refs/heads/wt\n")
    write(os.path.join(wt, ".git"), f"gitdir: {admin}\n")
    write(os.path.join(wt, "app.py"), "print('hello')\n")
    return wt


def test_a_worktree_honours_the_repositorys_info_exclude(repo: str, tmp_path: Any) -> None:
    """P6: in a worktree `.git` is a file; info/exclude is the common git folder's."""
    write(os.path.join(repo, ".git", "info", "exclude"), "*.secret\n")
    wt = make_worktree(tmp_path, repo)
    secret = write(os.path.join(wt, "prod.secret"), SECRET)
    assert_secret_kept_out(wt, tmp_path, secret)


def test_a_submodule_honours_its_own_info_exclude(repo: str, tmp_path: Any) -> None:
    """A submodule's `.git` file names `.git/modules/<name>` (no commondir): its info/exclude."""
    module = os.path.join(repo, ".git", "modules", "lib")
    write(os.path.join(module, "info", "exclude"), "*.secret\n")
    lib = os.path.join(repo, "lib")
    write(os.path.join(lib, ".git"), "gitdir: ../.git/modules/lib\n")
    secret = write(os.path.join(lib, "prod.secret"), SECRET)
    assert_secret_kept_out(repo, tmp_path, secret)


@pytest.mark.parametrize(
    "where",
    [
        "default ~/.config/git/ignore",
        "XDG_CONFIG_HOME/git/ignore",
        "~/.gitconfig",
        "XDG_CONFIG_HOME/git/config",
        "GIT_CONFIG_GLOBAL",
    ],
)
def test_the_users_global_excludes_are_honoured(
    repo: str, home: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """P7: `core.excludesFile` (default `$XDG_CONFIG_HOME/git/ignore`, `~/.config/git/ignore`)."""
    xdg = os.path.join(home, "xdg")
    if where == "default ~/.config/git/ignore":
        write(os.path.join(home, ".config", "git", "ignore"), "*.secret\n")
    elif where == "XDG_CONFIG_HOME/git/ignore":
        monkeypatch.setenv("XDG_CONFIG_HOME", xdg)
        write(os.path.join(xdg, "git", "ignore"), "*.secret\n")
        write(os.path.join(home, ".config", "git", "ignore"), "nothing-here\n")  # not read: XDG wins
    elif where == "~/.gitconfig":
        write(os.path.join(home, ".gitconfig"), "[user]\n\tname = Me\n[core]\n\texcludesFile = ~/.gitignore_global\n")
        write(os.path.join(home, ".gitignore_global"), "*.secret\n")
    elif where == "GIT_CONFIG_GLOBAL":
        write(os.path.join(home, ".gitconfig"), "[core]\n\texcludesFile = ~/not-this-one\n")  # git skips it
        write(os.path.join(home, "cfg"), "[core]\n\texcludesFile = ~/.gitignore_global\n")
        write(os.path.join(home, ".gitignore_global"), "*.secret\n")
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.path.join(home, "cfg"))
    else:
        monkeypatch.setenv("XDG_CONFIG_HOME", xdg)
        path = os.path.join(home, "my ignores", "list")
        write(
            os.path.join(xdg, "git", "config"),
            f'[core "x"]\n excludesfile = nope\n[Core]\n ExcludesFile = "{path}" ; c\n',
        )
        write(path, "*.secret\n")
    secret = write(os.path.join(repo, "prod.secret"), SECRET)
    assert_secret_kept_out(repo, tmp_path, secret)


@posix_only
def test_a_rule_file_that_is_a_fifo_never_hangs_the_checkpoint(repo: str, home: str, tmp_path: Any) -> None:
    """A hostile agent makes `.gitignore` (or the global excludes) a FIFO: the checkpoint must not
    wait for a writer that never comes (git itself would hang; a chat must not)."""
    os.mkfifo(os.path.join(repo, ".gitignore"))
    os.makedirs(os.path.join(home, ".config", "git"))
    os.mkfifo(os.path.join(home, ".config", "git", "ignore"))
    done: list[Checkpoint] = []
    worker = threading.Thread(target=lambda: done.append(checkpoint(repo, tmp_path)[0]), daemon=True)
    worker.start()
    worker.join(60)  # a hang detector, not a timing assertion: a blocked open() never returns
    assert done, "the checkpoint hung opening a FIFO rule file"
    assert os.path.join(repo, "app.py") in done[0].entries


def test_a_rule_with_many_stars_never_hangs_the_checkpoint(repo: str, tmp_path: Any) -> None:
    """A hostile `.gitignore` line with a dozen stars (`*a*a*...*b`) froze the scan for minutes on
    one 50-character name (a backtracking regular expression), holding the chat's checkpoint lock.
    It must be matched as git does, and promptly."""
    rule = "*a" * 12 + "*b"
    write(os.path.join(repo, ".gitignore"), rule + "\n")
    kept = write(os.path.join(repo, "a" * 50), "not matched: no final b\n")
    secret = write(os.path.join(repo, "a" * 49 + "b"), SECRET)
    # In a child process: a regular expression holds the GIL, so no thread of this one could notice.
    script = (
        "import sys; from companion.core.history.checkpoint_store import CheckpointStore;"
        "from companion.core.history.checkpoints import Checkpointer;"
        "ws, cache = sys.argv[1:3];"
        "print('\\n'.join(Checkpointer(CheckpointStore(cache, [ws]), [ws]).take().entries))"
    )
    cache = os.path.join(str(tmp_path), "cache")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    try:  # a hang detector, not a timing assertion: the old matcher took minutes
        child = subprocess.run(
            [sys.executable, "-c", script, repo, cache], capture_output=True, text=True, timeout=60, env=env
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the checkpoint hung matching a many-star .gitignore rule")
    assert child.returncode == 0, child.stderr
    entries = child.stdout.splitlines()
    assert kept in entries
    assert secret not in entries


# -- a watched chat sees a change of every rule file it reads (its quick path must not miss one) --


def watched_sees(ws: str, tmp_path: Any, secret: str, change: Any) -> None:
    checkpointer = Checkpointer(CheckpointStore(os.path.join(str(tmp_path), "cache"), [ws]), [ws], watch=True)
    try:
        assert secret in checkpointer.take().entries  # not ignored yet
        checkpointer.take()
        assert checkpointer.quick  # the watch vouches for every rule file (so it must see them change)
        change()
        assert secret not in checkpointer.take().entries, "the quick path missed a rule file's change"
    finally:
        checkpointer.close()


@linux_only
@pytest.mark.parametrize(
    "where", ["default", "XDG_CONFIG_HOME", "~/.gitconfig names a new file", "dotfiles linked from elsewhere"]
)
def test_a_change_of_the_global_excludes_is_seen_by_a_watched_chat(
    repo: str, home: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    secret = write(os.path.join(repo, "prod.secret"), "not yet a secret\n")
    if where == "XDG_CONFIG_HOME":
        monkeypatch.setenv("XDG_CONFIG_HOME", os.path.join(home, "xdg"))
        os.makedirs(os.path.join(home, "xdg"))  # git/ is made later

    def change() -> None:
        if where == "default":
            write(os.path.join(home, ".config", "git", "ignore"), "*.secret\n")  # .config/ did not exist
        elif where == "XDG_CONFIG_HOME":
            write(os.path.join(home, "xdg", "git", "ignore"), "*.secret\n")
        elif where == "~/.gitconfig names a new file":
            write(os.path.join(home, "elsewhere", "ignores"), "*.secret\n")
            write(os.path.join(home, ".gitconfig"), "[core]\nexcludesFile = ~/elsewhere/ignores\n")
        else:
            write(os.path.join(home, "dotfiles", "git", "ignore"), "*.secret\n")  # through the links

    if where == "dotfiles linked from elsewhere":  # ~/.config a link, its git/ignore a link
        write(os.path.join(home, "dotfiles", "git", "ignore"), "# nothing yet\n")
        os.makedirs(os.path.join(home, "config-store", "git"))
        os.symlink(os.path.join(home, "config-store"), os.path.join(home, ".config"))
        os.symlink(os.path.join(home, "dotfiles", "git", "ignore"), os.path.join(home, ".config", "git", "ignore"))

    watched_sees(repo, tmp_path, secret, change)


@linux_only
def test_a_change_of_a_worktrees_common_info_exclude_is_seen_by_a_watched_chat(repo: str, tmp_path: Any) -> None:
    wt = make_worktree(tmp_path, repo)
    secret = write(os.path.join(wt, "prod.secret"), "not yet a secret\n")
    watched_sees(wt, tmp_path, secret, lambda: write(os.path.join(repo, ".git", "info", "exclude"), "*.secret\n"))
