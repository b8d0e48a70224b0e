"""An ACP agent that writes raw JSON-RPC lines, for the shapes the SDK's agent side would refuse to
produce (malformed answers, hostile strings): `python raw_agent.py BEHAVIOUR`.

It answers `initialize`, `session/new` and `session/prompt` normally unless BEHAVIOUR changes one:
`init-version-huge` / `init-version-2` / `init-empty` / `init-null` (the initialize answer),
`prompt-empty` / `prompt-unknown-stop` / `prompt-null` (the prompt answer), `prompt-internal`
(a -32603 error with the agent's own message), `hostile-error` (the same, with terminal controls,
and controls on stderr), `hostile-crash` (controls on stderr, then it exits during the turn),
`hostile-login` (session/new needs a login, said with controls), `hostile-mode` (its current mode
id carries controls), `status` (extension notifications during the turn), `status-then-ask` (the
same, then a permission request to run a command, which the turn waits for), `unreviewed` (an
edit reported done that never asked), `refused` (a permission request for an edit that names no
file), `spoof-question` (a permission request for an edit; on `session/set_mode`,
sent while the real review question waits, text with a fake diff and a fake question).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

# Every control a hostile agent uses on a terminal: ESC (a colour, a cursor move), OSC 0 (the window
# title), OSC 52 (the clipboard), BEL, a lone CR (rewrites the line) and RLO (reverses it).
HOSTILE = "\x1b[2J\x1b]0;pwned title\x07\x1b]52;c;cm0gLXJmIH4=\x07\rfake\u202eevil"
AGENT_ERROR = "the model is overloaded: try again in a minute"
STATUSES = [f"Retrying the model connection (attempt {n} of 3)" for n in (1, 2, 3)]
FAKE = "\n--- notes.txt\n+++ notes.txt (proposed)\n-harmless\n+harmless\nApply this change to notes.txt? [y]es / [n]o: "
REPLY = "Hello from the raw agent."


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def update(session_id: str, body: dict[str, Any]) -> None:
    send({"method": "session/update", "params": {"sessionId": session_id, "update": body}})


def text(session_id: str, words: str) -> None:
    update(session_id, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": words}})


def initialize(behaviour: str) -> Any:
    answers: dict[str, Any] = {
        "init-version-huge": {"protocolVersion": 10**30, "agentCapabilities": {}},
        "init-version-2": {"protocolVersion": 2, "agentCapabilities": {}},
        "init-empty": {},
        "init-null": None,
    }
    return answers.get(behaviour, {"protocolVersion": 1, "agentCapabilities": {}})


def new_session(behaviour: str, request_id: Any) -> None:
    if behaviour == "hostile-login":
        send({"id": request_id, "error": {"code": -32000, "message": f"Authentication required {HOSTILE}"}})
        return
    result: dict[str, Any] = {"sessionId": "s1"}
    if behaviour == "hostile-mode":
        mode = f"ask{HOSTILE}"
        result["modes"] = {"currentModeId": mode, "availableModes": [{"id": mode, "name": "Ask"}]}
    send({"id": request_id, "result": result})


class Agent:
    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour
        self.prompt_id: Any = None

    def on_request(self, method: str, request_id: Any, params: Any) -> None:
        if method == "initialize":
            send({"id": request_id, "result": initialize(self.behaviour)})
        elif method == "session/new":
            new_session(self.behaviour, request_id)
        elif method == "session/prompt":
            self.prompt_id = request_id
            self.turn(params["sessionId"])
        elif method == "session/set_mode" and self.behaviour == "spoof-question":
            text(params["sessionId"], FAKE)  # the test asks while the real question is on the terminal
            send({"id": request_id, "result": {}})
        else:
            send({"id": request_id, "error": {"code": -32601, "message": "Method not found"}})

    def turn(self, session_id: str) -> None:
        behaviour = self.behaviour
        if behaviour in ("prompt-internal", "hostile-error"):
            message = AGENT_ERROR if behaviour == "prompt-internal" else f"{AGENT_ERROR} {HOSTILE}"
            if behaviour == "hostile-error":
                sys.stderr.write(f"stack: {HOSTILE}\n")
                sys.stderr.flush()
            send({"id": self.prompt_id, "error": {"code": -32603, "message": message}})
            return
        if behaviour == "hostile-crash":
            sys.stderr.write(f"fatal: {HOSTILE}\n")
            sys.stderr.flush()
            sys.exit(5)
        if behaviour in ("status", "status-then-ask"):
            for status in STATUSES:
                send({"method": "_example.com/status", "params": {"message": status}})
        if behaviour == "unreviewed":
            self.edit_done_without_asking(session_id)
        if behaviour in ("refused", "spoof-question", "status-then-ask"):
            self.ask_about_an_edit(session_id)
            return  # the turn ends when the client answers
        self.end_turn(session_id)

    def edit_done_without_asking(self, session_id: str) -> None:
        path = os.path.join(os.getcwd(), "notes.txt")
        diff = {"type": "diff", "path": path, "oldText": "a\n", "newText": "b\n"}
        call = {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit notes.txt", "kind": "edit"}
        update(session_id, {**call, "status": "completed", "content": [diff], "locations": [{"path": path}]})

    def ask_about_an_edit(self, session_id: str) -> None:
        path = os.path.join(os.getcwd(), "notes.txt")
        content = [] if self.behaviour == "refused" else [{"type": "diff", "path": path, "newText": "changed\n"}]
        call = {"toolCallId": "t1", "title": "Edit a file", "kind": "edit", "status": "pending", "content": content}
        if self.behaviour == "status-then-ask":
            call = {"toolCallId": "t1", "title": "Run make", "kind": "execute", "status": "pending"}
        update(session_id, {"sessionUpdate": "tool_call", **call})
        options = [
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]
        params = {"sessionId": session_id, "toolCall": call, "options": options}
        send({"id": "permission", "method": "session/request_permission", "params": params})

    def end_turn(self, session_id: str) -> None:
        text(session_id, REPLY)
        answers: dict[str, Any] = {
            "prompt-empty": {},
            "prompt-unknown-stop": {"stopReason": "finished"},
            "prompt-null": None,
        }
        send({"id": self.prompt_id, "result": answers.get(self.behaviour, {"stopReason": "end_turn"})})

    def on_answer(self, session_id: str) -> None:
        """The client answered our permission request: the turn ends."""
        self.end_turn(session_id)


def main() -> None:
    agent = Agent(sys.argv[1])
    for line in sys.stdin:
        message = json.loads(line)
        if "method" in message and "id" in message:
            agent.on_request(message["method"], message["id"], message.get("params"))
        elif "method" not in message and message.get("id") == "permission":
            agent.on_answer("s1")


if __name__ == "__main__":
    main()
