"""The window's listening socket, bound before any server library is imported.

Gemini CLI reads the discovery file once, when it starts, and Terminus restarts a restored Gemini
CLI tab as Sublime starts: the file must be out before the MCP SDK (most of a second to import)
has loaded. So the socket is bound and listening first, with nothing but the standard library;
a client that connects while the server stack loads waits in the kernel's backlog and is served
when uvicorn takes the socket over (asyncio's `create_server(sock=...)` listens again, which only
adjusts the backlog).
"""

from __future__ import annotations

import os
import socket

# uvicorn's default backlog: what a burst of clients can queue while the stack loads.
BACKLOG = 2048


def bind_loopback(port: int) -> socket.socket:
    """A non-blocking TCP socket listening on 127.0.0.1:`port` (0: any free port)."""
    # IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on sockets created with it, and without
    # it every response stalls ~40 ms on Nagle + delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if port:
            # POSIX: rebind a fixed port still in TIME_WAIT. Windows' SO_REUSEADDR would instead let
            # two sockets share a port in use, so there a fixed port is claimed exclusively.
            exclusive = getattr(socket, "SO_EXCLUSIVEADDRUSE", None)
            option = exclusive if os.name == "nt" and exclusive is not None else socket.SO_REUSEADDR
            sock.setsockopt(socket.SOL_SOCKET, option, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock
