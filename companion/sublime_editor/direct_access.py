"""`server_port` and `auth_token`: a fixed address and token for clients configured by hand.

By default every window's server takes a free port and a fresh random token at each start, and the
discovery file tells Gemini CLI (and the stdio bridge) both. A client configured by hand with the
HTTP URL (Claude Code's `claude mcp add --transport http`) needs them to stay the same:

* `server_port` (0 = a free port): only one server can listen on a port, so the **first window**
  that starts gets it; the other windows take free ports. When that window closes, the next window
  that opens gets it. If the port is taken (another program, another Sublime instance), the window
  falls back to a free port and says so in the status bar and the console: Gemini CLI and the
  bridge still find it through the discovery file; only the hand-configured client does not.
* `auth_token` ("" = random at each start): used by every window. It must be at least 32
  characters of letters, digits and `-._~+/=` (it is sent in an HTTP header); anything else is
  refused with a console message and a random token is used instead.
"""

from __future__ import annotations

import re

from . import settings

TOKEN_PATTERN = re.compile(r"[A-Za-z0-9._~+/=-]{32,512}")
MIN_TOKEN_LENGTH = 32


def requested_port() -> tuple[int, str | None]:
    """The fixed port asked for (0: none), and a problem with the setting to report."""
    value = settings.settings().get("server_port", 0)
    if value is None or value == 0:
        return 0, None
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 65536:
        return value, None
    return 0, f"the setting server_port must be 0 or a port number from 1 to 65535, not {value!r}; using a free port"


def requested_token() -> tuple[str | None, str | None]:
    """The fixed token asked for (None: a random one), and a problem with the setting to report.

    The problem text never contains the token.
    """
    value = settings.settings().get("auth_token", "")
    if value is None or value == "":
        return None, None
    if isinstance(value, str) and TOKEN_PATTERN.fullmatch(value):
        return value, None
    return None, (
        f"the setting auth_token must be at least {MIN_TOKEN_LENGTH} characters of letters, digits and -._~+/= "
        '(e.g. the output of: python3 -c "import secrets; print(secrets.token_urlsafe(32))"); '
        "using a random token for now"
    )


def settings_key() -> tuple[object, ...]:
    """What, when it changes, means the servers must restart to take it: the fixed address, and
    which agents are served (the discovery file's name, the lock file, the WebSocket endpoint)."""
    package = settings.settings()
    return (
        package.get("server_port", 0),
        package.get("auth_token", ""),
        settings.serves_gemini(),
        settings.serves_claude(),
    )
