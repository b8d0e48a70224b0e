"""Issue #24: on Windows `ask_gemini` runs what npm's `gemini.cmd` runs (node and the CLI's script),
never the batch file, so cmd.exe never reads the prompt. The shims are written by npm's own
`cmd-shim` module for a package laid out as `npm install -g` lays it out on Windows (the shim in the
prefix, the package in `<prefix>/node_modules`); the platform is a parameter, so this runs anywhere."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from companion.mcp_tools.ask import GeminiFailed, command_line
from companion.mcp_tools.windows_shim import SHIM_LIMIT, NotResolved, direct_argv
from tests.conformance.harness import node

# What cmd.exe would run, expand, re-quote or cut when forwarded by `%*` (BatBadBut).
HOSTILE_PROMPTS = [
    'x" & calc & "',
    "%PATH% and %USERPROFILE%",
    "a ^& b | c > out.txt < in.txt",
    "first line\r\nsecond & line\nthird",
    '"quoted \\" backslash\\\\" (parens) !delayed!',
]
SCRIPT = os.path.join("node_modules", "@google", "gemini-cli", "bundle", "gemini.js")


CMD_SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cmd_shim", "node_modules", "cmd-shim")


def cmd_shim_module() -> str:
    """npm's own cmd-shim, pinned at the version npm 11 bundles (`tests/mcp_tools/cmd_shim`, installed
    by `dev.py test`): the Node.js a Linux distribution ships may come without npm's bundled copy."""
    if not os.path.isfile(os.path.join(CMD_SHIM, "package.json")):
        raise AssertionError(f"npm's cmd-shim is not installed in {CMD_SHIM}: run `python3 dev.py test` once.")
    return CMD_SHIM


def npm_install(prefix: str, shebang: str | None = "#!/usr/bin/env node", script: str = SCRIPT) -> str:
    """`prefix` laid out as `npm install -g @google/gemini-cli` leaves it on Windows; the shim path."""
    target = os.path.join(prefix, script)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w", encoding="utf-8") as handle:
        handle.write((shebang + "\n" if shebang else "") + "console.log(JSON.stringify(process.argv))\n")
    shim = os.path.join(prefix, "gemini")
    code = (
        "require(process.argv[1])(process.argv[2], process.argv[3]).catch(e => { console.error(e); process.exit(1) })"
    )
    subprocess.run([node(), "-e", code, cmd_shim_module(), target, shim], check=True, timeout=60)
    return shim + ".cmd"


@pytest.fixture
def prefix(tmp_path: str) -> str:
    path = os.path.join(str(tmp_path), "npm prefix & co")  # a space and a cmd.exe character in the folder
    os.makedirs(path)
    return path


@pytest.mark.parametrize("prompt", HOSTILE_PROMPTS)
def test_npm_shim_runs_node_beside_it_on_the_clis_script_with_the_prompt_as_one_argument(
    prefix: str, prompt: str
) -> None:
    shim = npm_install(prefix)
    with open(shim, encoding="utf-8") as handle:
        assert "%dp0%" in handle.read()  # really cmd-shim's batch file
    node_exe = os.path.join(prefix, "node.exe")  # the Node.js installer puts npm's shims beside node.exe
    os.symlink(node(), node_exe)
    argv = command_line([shim, "--debug"], prompt, "gemini-2.5-flash", platform="win32")
    assert argv == [
        node_exe,
        os.path.join(prefix, SCRIPT),
        "--debug",
        f"--prompt={prompt}",
        "-o",
        "json",
        "-m",
        "gemini-2.5-flash",
    ]


def test_without_node_exe_beside_the_shim_node_comes_from_path_as_the_shim_does(prefix: str) -> None:
    shim = npm_install(prefix)
    argv = command_line([shim], 'x" & calc & "', "", platform="win32")
    assert argv == [shutil.which("node"), os.path.join(prefix, SCRIPT), '--prompt=x" & calc & "', "-o", "json"]


def test_the_resolved_command_gives_the_script_the_prompt_unchanged(prefix: str) -> None:
    # The script prints the arguments it got: what npm's shim would have run, minus cmd.exe.
    shim = npm_install(prefix)
    prompt = HOSTILE_PROMPTS[0] + HOSTILE_PROMPTS[1]
    argv = command_line([shim], prompt, "", platform="win32")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout)[1:] == [os.path.join(prefix, SCRIPT), f"--prompt={prompt}", "-o", "json"]


def test_the_scripts_own_node_options_come_before_it(prefix: str) -> None:
    shim = npm_install(prefix, "#!/usr/bin/env node --no-warnings --max-old-space-size=4096")
    argv = command_line([shim], "hi", "", platform="win32")
    assert argv[:4] == [
        shutil.which("node"),
        "--no-warnings",
        "--max-old-space-size=4096",
        os.path.join(prefix, SCRIPT),
    ]


def test_a_package_without_a_shebang_runs_its_program_directly(prefix: str) -> None:
    program = os.path.join("node_modules", "gemini-native", "gemini.exe")
    shim = npm_install(prefix, shebang=None, script=program)
    assert command_line([shim], "hi & bye", "", platform="win32")[:2] == [
        os.path.join(prefix, program),
        "--prompt=hi & bye",
    ]


def refusal(gemini_command: list[str], prompt: str = "What is 2 + 2?") -> str:
    with pytest.raises(GeminiFailed) as info:
        command_line(gemini_command, prompt, "", platform="win32")
    message = str(info.value)
    assert "\n" not in message
    assert "`gemini_command`" in message and "npm root -g" in message and "gemini.exe" in message
    return message


@pytest.mark.parametrize("prompt", ["What is 2 + 2?", *HOSTILE_PROMPTS])
def test_a_batch_file_that_is_not_an_npm_shim_is_refused_whatever_the_prompt(prefix: str, prompt: str) -> None:
    wrapper = os.path.join(prefix, "gemini.bat")
    with open(wrapper, "w", encoding="utf-8") as handle:
        handle.write('@echo off\r\nnode "%~dp0\\node_modules\\@google\\gemini-cli\\bundle\\gemini.js" %*\r\n')
    os.chmod(wrapper, 0o755)
    message = refusal([wrapper], prompt)
    assert message.startswith(
        f"ask_gemini will not pass a prompt to {wrapper}: Windows runs a batch file through cmd.exe"
    )
    assert "it is not a shim written by npm 7 or newer" in message


def test_a_shim_that_sets_environment_variables_is_refused(prefix: str) -> None:
    shim = npm_install(prefix, "#!/usr/bin/env -S NODE_OPTIONS=--no-warnings node")
    with open(shim, encoding="utf-8") as handle:
        assert "@SET NODE_OPTIONS=--no-warnings" in handle.read()
    assert "sets environment variables" in refusal([shim])


def test_a_shim_whose_script_is_gone_is_refused(prefix: str) -> None:
    shim = npm_install(prefix)
    os.remove(os.path.join(prefix, SCRIPT))
    assert f"the script it runs, {os.path.join(prefix, SCRIPT)}, does not exist" in refusal([shim])


def test_a_shim_over_the_size_cap_is_not_read_as_one(prefix: str) -> None:
    shim = npm_install(prefix)
    with open(shim, "a", encoding="utf-8") as handle:
        handle.write("REM " + "x" * SHIM_LIMIT + "\r\n")
    assert "not a shim written by npm" in refusal([shim])


def test_node_found_as_a_batch_file_is_refused(prefix: str) -> None:
    # A version manager's `node.cmd` on PATH would put cmd.exe back between us and the prompt.
    shim = npm_install(prefix)
    node_cmd = os.path.join(prefix, "bin", "node.cmd")
    os.makedirs(os.path.dirname(node_cmd))
    with open(node_cmd, "w", encoding="utf-8") as handle:
        handle.write('@"C:\\nodejs\\node.exe" %*\r\n')
    with pytest.raises(NotResolved, match="is a batch file too"):
        direct_argv(shim, "win32", which=lambda name: node_cmd if name == "node" else None)


@pytest.mark.parametrize("platform", ["linux", "darwin"])
def test_on_macos_and_linux_the_program_runs_as_found(prefix: str, platform: str) -> None:
    shim = npm_install(prefix)
    for program in (shim, shim[: -len(".cmd")]):  # only Windows hands a .cmd to cmd.exe
        argv = command_line([program], 'x" & calc & "', "", platform=platform)
        assert argv == [program, '--prompt=x" & calc & "', "-o", "json"]


def test_on_windows_a_program_that_is_not_a_batch_file_runs_as_found(prefix: str) -> None:
    program = os.path.join(prefix, "gemini.exe")
    os.symlink(node(), program)
    assert command_line([program], "%PATH%", "", platform="win32") == [program, "--prompt=%PATH%", "-o", "json"]
