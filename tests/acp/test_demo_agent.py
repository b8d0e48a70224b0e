"""README's "Try it in one minute", run as written: the built-in demo agent (`chat --agent demo`),
offline, shows a review, the change set and a revert; the outputs are the README's, byte for byte,
with the README's folder (/tmp/try) standing for this test's."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from tests.acp.conftest import CEILING, ROOT

README = os.path.join(ROOT, "README.md")
FOLDER = "/tmp/try"


def readme_section() -> tuple[list[str], str]:
    """The commands (sh block) and the output (text block) of "Try it in one minute"."""
    with open(README, encoding="utf-8") as handle:
        text = handle.read()
    section = text.split("### Try it in one minute", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    commands = re.search(r"```sh\n(.*?)```", section, re.S)
    output = re.search(r"```text\n(.*?)```", section, re.S)
    assert commands and output, "README lost its 'Try it in one minute' blocks"
    return commands.group(1).splitlines(), output.group(1)


@pytest.mark.skipif(sys.platform == "win32", reason="the README's commands are for macOS and Linux shells")
def test_the_readme_try_it_in_one_minute_runs_as_written(tmp_path: str) -> None:
    commands, expected = readme_section()
    workspace = os.path.realpath(os.path.join(str(tmp_path), "try"))
    env = {**os.environ, "GEMINI_COMPANION_CACHE": os.path.join(str(tmp_path), "cache"), "PYTHONUNBUFFERED": "1"}
    assert commands[0] == f"mkdir {FOLDER}"
    os.mkdir(workspace)
    output = ""
    for line in commands[1:]:
        argv = [workspace if word == FOLDER else word for word in shlex.split(line)]
        assert argv[:2] == ["python3", "dev.py"], line
        answer = "y\n" if argv[2] == "chat" else ""  # the review's question: y, as the README says
        done = subprocess.run(
            [sys.executable, *argv[1:]], input=answer, cwd=ROOT, env=env, capture_output=True, text=True,
            timeout=CEILING,
        )  # fmt: skip
        assert (done.returncode, done.stderr) == (0, ""), (line, done.stdout, done.stderr)
        output += done.stdout
    # A terminal echoes the typed answer after the question; a pipe does not.
    output = output.replace("[y]es / [n]o: \n", "[y]es / [n]o: y\n")
    # The command's output is the running Python's version: the README writes it 3.x.y.
    output = re.sub(r"│ Python 3\.\d+\.\d+\S*", "│ Python 3.x.y", output)
    assert output.replace(workspace, FOLDER) == expected
    assert os.listdir(workspace) == ["demo.txt"]  # the unreviewed file is reverted (it did not exist)
    with open(os.path.join(workspace, "demo.txt"), encoding="utf-8") as handle:
        assert handle.read() == "A line the demo agent proposed.\n"


def test_the_demo_agent_needs_no_network_and_no_account(tmp_path: str) -> None:
    """Rejected review: nothing is written through it; the agent still ends its turn normally."""
    workspace = str(tmp_path)
    env = {**os.environ, "PYTHONPATH": ROOT, "NO_PROXY": "*", "HTTPS_PROXY": "http://127.0.0.1:9", "HOME": workspace}
    argv = ["chat", "--workspace", workspace, "--agent", "demo", "--diff-policy", "reject", "--prompt", "Hi"]
    done = subprocess.run(
        [sys.executable, "-m", "companion", *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=CEILING
    )
    assert done.returncode == 0, done.stderr
    assert "[tool edit: Edit demo.txt — failed]" in done.stdout
    assert sorted(os.listdir(workspace)) == ["demo-notes.txt"]


@pytest.mark.parametrize("name", ["demo-notes.txt", "demo.txt"])
@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_the_demo_agent_never_writes_through_a_link_out_of_the_workspace(tmp_path: str, name: str, link: str) -> None:
    """The attack: the workspace's demo file is a link to a file outside it. The demo agent (shown to
    newcomers) must leave the outside file as it was, accepted review or not, and say why."""
    workspace, outside = os.path.join(str(tmp_path), "ws"), os.path.join(str(tmp_path), "outside.txt")
    os.mkdir(workspace)
    with open(outside, "w", encoding="utf-8") as handle:
        handle.write("outside\n")
    try:
        (os.symlink if link == "symlink" else os.link)(outside, os.path.join(workspace, name))
    except OSError as exc:  # Windows without the symlink privilege
        pytest.skip(f"cannot make a {link} here: {exc}")
    env = {**os.environ, "PYTHONPATH": ROOT, "GEMINI_COMPANION_CACHE": os.path.join(str(tmp_path), "cache")}
    argv = ["chat", "--workspace", workspace, "--agent", "demo", "--diff-policy", "accept", "--prompt", "Hi"]
    done = subprocess.run(
        [sys.executable, "-m", "companion", *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=CEILING
    )
    with open(outside, encoding="utf-8") as handle:
        assert handle.read() == "outside\n", done.stdout
    assert f"{name} is a link (or not a plain file of its own)" in done.stdout, done.stdout
    assert done.returncode in (0, 3), done.stderr
