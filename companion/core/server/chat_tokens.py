"""Bearer tokens of the window's chats: each chat's agent reaches the window's MCP tools with a
token of its own, accepted only while the chat lives (the window's main token, which the discovery
file and the bridge hold, is never handed to an agent).

Issued and revoked on any thread (the chat's, Sublime's main thread); checked by the request guard
on the server's loop. A revoked token answers 401 from the next request on.
"""

from __future__ import annotations

import hmac
import threading

from .security import new_token

# The stdio bridge a chat's agent runs (`python -m companion bridge --port N`) takes the chat's token
# from this variable of its environment: never from its argv, which other local users' `ps` shows.
BRIDGE_TOKEN_ENV = "GEMINI_COMPANION_BRIDGE_TOKEN"


class ChatTokens:
    """The tokens of the chats that live now; one per chat."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._expected: dict[str, bytes] = {}  # token -> its Authorization header value

    def issue(self) -> str:
        token = new_token()
        with self._lock:
            self._expected[token] = f"Bearer {token}".encode("latin-1")
        return token

    def revoke(self, token: str) -> None:
        with self._lock:
            self._expected.pop(token, None)

    def accepts(self, authorization: bytes) -> bool:
        """Is `authorization` (a request's whole header value) a live chat's? Constant-time for each."""
        with self._lock:
            expected = list(self._expected.values())
        accepted = False
        for value in expected:  # every one compared: the time says nothing about which matched
            accepted |= hmac.compare_digest(authorization, value)
        return accepted

    def __len__(self) -> int:
        with self._lock:
            return len(self._expected)
