"""A client in its own process, for the fault tests to SIGKILL at a chosen moment.

python -m tests.hostile.killable_client <url> <token> review <filePath>   openDiff, print "opened", wait
python -m tests.hostile.killable_client <url> <token> stream              print "streaming" once the
                                                                          first context arrived, wait
python -m tests.hostile.killable_client <url> <token> body <filePath>     send half of an 8 MB openDiff
                                                                          body, print "sending", wait
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import urllib.parse

from tests.mcp_client import connect


async def sdk_client(url: str, token: str, mode: str, file_path: str) -> None:
    async with connect(url, token, name=f"doomed-{mode}") as client:
        if mode == "review":
            result = await client.open_diff(file_path, "proposed by a client that will die\n")
            assert not result.is_error
            print("opened", flush=True)
        else:
            await client.wait_for("ide/contextUpdate")
            print("streaming", flush=True)
        await asyncio.sleep(3600)


def half_a_body(url: str, token: str, file_path: str) -> None:
    port = urllib.parse.urlsplit(url).port
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "openDiff", "arguments": {"filePath": file_path, "newContent": "x" * (8 * 1024 * 1024)}},
        }
    ).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(head + body[: len(body) // 2])
    print("sending", flush=True)
    sock.recv(1)  # blocks until killed


if __name__ == "__main__":
    url_, token_, mode_ = sys.argv[1:4]
    path_ = sys.argv[4] if len(sys.argv) > 4 else ""
    if mode_ == "body":
        half_a_body(url_, token_, path_)
    else:
        asyncio.run(sdk_client(url_, token_, mode_, path_))
