"""Fixtures for the workspace tools: a headless companion (`python -m companion serve` in a subprocess
with a private TMPDIR) and the stdio bridge driven by the SDK's own stdio client."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import mcp_types as types
import pytest
from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.serve_process import ServeProcess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def tmpdir_env(tmp_path: str) -> str:
    """A private TMPDIR (Node's os.tmpdir()): the discovery folder of the companion and the bridge."""
    path = os.path.join(str(tmp_path), "tmp")
    os.makedirs(path)
    return path


@pytest.fixture
def workspace(tmp_path: str) -> str:
    path = os.path.join(str(tmp_path), "workspace")
    os.makedirs(path)
    return os.path.realpath(path)


@pytest.fixture
def outside(tmp_path: str) -> str:
    path = os.path.join(str(tmp_path), "outside")
    os.makedirs(path)
    with open(os.path.join(path, "secret.txt"), "w") as handle:
        handle.write("top secret\n")
    return os.path.realpath(path)


def child_env(tmpdir_env: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMINI_CLI_IDE_")}
    env.update({"TMPDIR": tmpdir_env, "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"})
    env.update(extra or {})
    return env


@contextmanager
def serve(
    tmpdir_env: str, workspace: str, policy: str, *args: str, env: dict[str, str] | None = None
) -> Iterator[ServeProcess]:
    process = subprocess.Popen(
        [sys.executable, "-m", "companion", "serve", "--workspace", workspace, "--diff-policy", policy, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        env=child_env(tmpdir_env, env),
    )
    server = ServeProcess(process)
    try:
        server.expect("listening on http://127.0.0.1:")
        server.expect("Discovery file:")
        yield server
    finally:
        server.stop()


@asynccontextmanager
async def bridge(
    tmpdir_env: str, cwd: str, *args: str, name: str = "bridge-test-client"
) -> AsyncIterator[ClientSession]:
    """The SDK's stdio client running `python -m companion bridge ARGS` in `cwd`."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "companion", "bridge", *args],
        env={"TMPDIR": tmpdir_env, "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"},
        cwd=cwd,
    )
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog if not os.environ.get("BRIDGE_DEBUG") else sys.stderr) as (read, write),
            ClientSession(read, write, client_info=types.Implementation(name=name, version="0")) as session,
        ):
            await session.initialize()
            yield session


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))
