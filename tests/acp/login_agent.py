"""An ACP agent that asks things of the user, on the SDK's agent side (no hand-written JSON-RPC):
`python login_agent.py BEHAVIOUR`. Every request it gets is appended as a JSON line to
$LOGIN_AGENT_RECORD (when set), with its `clientCapabilities` for `initialize`.

Behaviours:
- `agent`: `authMethods` [agent `oauth`, env_var `api-key` (EXAMPLE_API_KEY)]; session/new answers
  auth_required (-32000) until `authenticate {methodId: "oauth"}` came;
- `terminal`: `authMethods` [terminal `tty-login`: this program with `--login`, and LOGIN_MARKER
  set to $LOGIN_AGENT_MARKER]; session/new answers auth_required until the marker file holds
  CODE. `python login_agent.py terminal --login` is the login command: it asks for the code on
  stdin and writes what was typed to $LOGIN_MARKER (a tiny login program, as a real agent's is);
- `prompt-auth`: as `agent`, but session/new works and each prompt answers auth_required until
  `authenticate` came (as claude-agent-acp does without a key);
- `asks`: config options `fast` (boolean) and `effort` (select) on session/new; a prompt `form`
  sends a form elicitation (a string, a boolean, an enum) and a prompt `url` a URL elicitation;
  the turn's reply is the answer's action, and the answer is recorded.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

CODE = "let me in"
URL = "https://login.example.com/oauth/authorize?client_id=chat&state=a1b2c3&redirect_uri=http%3A%2F%2Flocalhost%3A8765"
FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "minLength": 2},
        "subscribe": {"type": "boolean", "title": "Subscribe"},
        "color": {"type": "string", "title": "Color", "enum": ["red", "green", "blue"]},
        "age": {"type": "integer", "title": "Age", "minimum": 0},
    },
    "required": ["name", "subscribe", "color"],
}
FAST = {"id": "fast", "name": "Fast mode", "type": "boolean", "currentValue": False}
EFFORT = {
    "id": "effort",
    "name": "Effort",
    "type": "select",
    "currentValue": "low",
    "options": [{"value": "low", "name": "Low"}, {"value": "high", "name": "High"}],
}


def record(what: str, data: Any) -> None:
    path = os.environ.get("LOGIN_AGENT_RECORD")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"method": what, "params": data}) + "\n")


def recorded(path: str) -> list[dict[str, Any]]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def login() -> None:
    """The terminal login: the code typed, written where the method's env says."""
    sys.stdout.write("Enter the login code: ")
    sys.stdout.flush()
    code = sys.stdin.readline().strip()
    with open(os.environ["LOGIN_MARKER"], "w", encoding="utf-8") as handle:
        handle.write(code)
    print("Logged in." if code == CODE else "Wrong code.")
    sys.exit(0 if code == CODE else 1)


async def serve(behaviour: str) -> None:
    from acp import RequestError, run_agent, text_block, update_agent_message
    from acp.schema import (
        AuthenticateResponse,
        ElicitationFormSessionMode,
        ElicitationUrlSessionMode,
        InitializeResponse,
        NewSessionResponse,
        PromptResponse,
        SetSessionConfigOptionResponse,
    )

    class Agent:
        def __init__(self) -> None:
            self.conn: Any = None
            self.authenticated = False
            self.options = [dict(FAST), dict(EFFORT)]

        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
            capabilities = kwargs.get("client_capabilities")
            dumped = capabilities.model_dump(mode="json", by_alias=True, exclude_none=True) if capabilities else None
            record("initialize", dumped)
            methods: list[dict[str, Any]] = []
            if behaviour in ("agent", "prompt-auth"):
                methods = [
                    {"id": "oauth", "name": "Log in with the browser", "description": "OAuth"},
                    {
                        "id": "api-key",
                        "name": "API key",
                        "type": "env_var",
                        "vars": [{"name": "EXAMPLE_API_KEY", "label": "Example key"}],
                        "link": "https://example.com/keys",
                    },
                ]
            elif behaviour == "terminal":
                methods = [
                    {
                        "id": "tty-login",
                        "name": "Log in in a terminal",
                        "type": "terminal",
                        "args": ["--login"],
                        "env": {"LOGIN_MARKER": os.environ["LOGIN_AGENT_MARKER"]},
                    }
                ]
            return InitializeResponse.model_validate({"protocolVersion": 1, "authMethods": methods})

        async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
            record("authenticate", method_id)
            self.authenticated = method_id == "oauth"
            return AuthenticateResponse()

        def _logged_in(self) -> bool:
            if behaviour in ("agent", "prompt-auth"):
                return self.authenticated
            if behaviour == "terminal":
                marker = os.environ["LOGIN_AGENT_MARKER"]
                if not os.path.exists(marker):
                    return False
                with open(marker, encoding="utf-8") as handle:
                    return handle.read() == CODE
            return True

        async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
            record("session/new", cwd)
            if behaviour != "prompt-auth" and not self._logged_in():
                raise RequestError.auth_required()
            if behaviour == "asks":
                return NewSessionResponse.model_validate({"sessionId": "s1", "configOptions": self.options})
            return NewSessionResponse(session_id="s1")

        async def set_config_option(
            self, config_id: str, session_id: str, value: Any, **kwargs: Any
        ) -> SetSessionConfigOptionResponse:
            record("session/set_config_option", {"configId": config_id, "value": value})
            self.options = [dict(o, currentValue=value) if o["id"] == config_id else o for o in self.options]
            return SetSessionConfigOptionResponse.model_validate({"configOptions": self.options})

        async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
            text = " ".join(getattr(b, "text", "") for b in prompt).strip()
            record("session/prompt", text)
            if not self._logged_in():
                raise RequestError.auth_required()
            reply = "Hello."
            if behaviour == "asks" and text in ("form", "url"):
                if text == "form":
                    mode: Any = ElicitationFormSessionMode.model_validate(
                        {"sessionId": session_id, "requestedSchema": FORM}
                    )
                else:
                    mode = ElicitationUrlSessionMode.model_validate(
                        {"sessionId": session_id, "elicitationId": "e1", "url": URL}
                    )
                answer = await self.conn.create_elicitation(message=f"the {text} of the test", mode=mode)
                data = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
                record("elicitation/create", data)
                reply = f"Elicitation: {data['action']}."
            await self.conn.session_update(session_id, update_agent_message(text_block(reply)))
            return PromptResponse(stop_reason="end_turn")

        async def cancel(self, session_id: str, **kwargs: Any) -> None:
            pass

    await run_agent(Agent())  # type: ignore[arg-type]


def main() -> None:
    if "--login" in sys.argv[2:]:
        login()
        return
    asyncio.run(serve(sys.argv[1]))


if __name__ == "__main__":
    main()
