"""An ACP agent written to attack the client, speaking raw JSON-RPC lines: the SDK's agent side
would refuse to produce most of these shapes (a 200 000-deep line, answers it never reads).
`python hostile_agent.py BEHAVIOUR`; files it records or waits for come from $HOSTILE_* variables.

Behaviours, each acting on `session/prompt`:
- `terminal`: calls each `terminal/*` method and writes every answer, as JSON lines, to $HOSTILE_RECORD.
- `deep`: a line of JSON nested 200 000 deep, then a normal reply.
- `tool-content`: $HOSTILE_CALLS tool calls of $HOSTILE_MB MB each ($HOSTILE_KIND `text` or `diff`).
- `reads`: $HOSTILE_CALLS concurrent `fs/read_text_file` of $HOSTILE_PATH, then stops reading its
  stdin until $HOSTILE_GO exists; then reads every answer and replies with how many were whole.
- `permissions`: 5 concurrent `session/request_permission` (not edits), then a reply while they
  are open; once all are answered, "5 answered".
- `linger`: writes "PID TMPDIR" to $HOSTILE_RECORD and never answers, ignoring stdin EOF and SIGHUP.
- `orphans`: starts a child in its own session and a double-forked grandchild (each writes its PID
  to $HOSTILE_RECORD.N), then crashes.
- `escape`: a double-forked grandchild with an empty environment, holding stdout open; then crashes.
- `nest`: a chain of $HOSTILE_DEPTH nested folders `d` in $HOSTILE_ROOT, a file `f` at the bottom
  (its own shell would do the same), then a normal reply.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

REPLY = "The hostile agent is still here."
TERMINAL_METHODS = {
    "terminal/create": {"command": "echo", "args": ["pwned"]},
    "terminal/output": {"terminalId": "t1"},
    "terminal/wait_for_exit": {"terminalId": "t1"},
    "terminal/kill": {"terminalId": "t1"},
    "terminal/release": {"terminalId": "t1"},
}
DEPTH = 200_000
SLEEPER = "import time\nwhile True: time.sleep(60)"
RECORD_PID = (  # writes its PID to argv[1], whole or not at all
    "import os, sys\nopen(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\n"
    "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\n"
)


def write(message: dict[str, Any]) -> None:
    sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def read() -> dict[str, Any]:
    line = sys.stdin.buffer.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)


def answer_of(request_id: Any) -> dict[str, Any]:
    """Read until the answer to our request `request_id` (the client's own requests answered -32601)."""
    while True:
        message = read()
        if message.get("id") == request_id and "method" not in message:
            return message


def say(session_id: str, text: str) -> None:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}})


def main() -> None:
    behaviour = sys.argv[1]
    while True:
        message = read()
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            write({"jsonrpc": "2.0", "id": request_id, "result": {"protocolVersion": 1, "agentCapabilities": {}}})
        elif method == "session/new":
            write({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": "s1"}})
        elif method == "session/prompt":
            ACTIONS[behaviour]("s1")
            write({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})
        elif request_id is not None and method is not None:
            write({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})


def terminal(session_id: str) -> None:
    with open(os.environ["HOSTILE_RECORD"], "w", encoding="utf-8") as record:
        for n, (method, params) in enumerate(TERMINAL_METHODS.items()):
            write({"jsonrpc": "2.0", "id": f"t{n}", "method": method, "params": {"sessionId": session_id, **params}})
            record.write(json.dumps({"method": method, "answer": answer_of(f"t{n}")}) + "\n")
    say(session_id, REPLY)


def deep(session_id: str) -> None:
    sys.stdout.buffer.write(b'{"jsonrpc":"2.0","method":"x","params":' + b"[" * DEPTH + b"]" * DEPTH + b"}\n")
    sys.stdout.buffer.flush()
    say(session_id, REPLY)


def tool_content(session_id: str) -> None:
    size = int(float(os.environ["HOSTILE_MB"]) * 1024 * 1024)
    for n in range(int(os.environ["HOSTILE_CALLS"])):
        text = chr(ord("a") + n % 26) * size
        if os.environ["HOSTILE_KIND"] == "diff":
            content = [{"type": "diff", "path": os.path.abspath(f"f{n}.txt"), "oldText": "", "newText": text}]
        else:
            content = [{"type": "content", "content": {"type": "text", "text": text}}]
        update = {
            "sessionUpdate": "tool_call",
            "toolCallId": f"c{n}",
            "title": f"call {n}",
            "kind": "other",
            "status": "completed",
            "content": content,
        }
        write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}})
    say(session_id, REPLY)


def reads(session_id: str) -> None:
    calls = int(os.environ["HOSTILE_CALLS"])
    for n in range(calls):
        params = {"sessionId": session_id, "path": os.environ["HOSTILE_PATH"]}
        write({"jsonrpc": "2.0", "id": f"r{n}", "method": "fs/read_text_file", "params": params})
    while not os.path.exists(os.environ["HOSTILE_GO"]):  # not reading stdin meanwhile
        time.sleep(0.05)
    expected = os.path.getsize(os.environ["HOSTILE_PATH"])
    sizes: dict[str, int] = {}  # the answers come in any order
    while len(sizes) < calls:
        message = read()
        if "method" not in message and str(message.get("id")).startswith("r"):
            sizes[message["id"]] = len((message.get("result") or {}).get("content", ""))
    say(session_id, f"{sum(size == expected for size in sizes.values())} whole answers")


def permissions(session_id: str) -> None:
    for n in range(5):
        call = {"toolCallId": f"p{n}", "title": f"run {n}", "kind": "execute"}
        options = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]
        params = {"sessionId": session_id, "toolCall": call, "options": options}
        write({"jsonrpc": "2.0", "id": f"p{n}", "method": "session/request_permission", "params": params})
    say(session_id, REPLY)
    answered = set()
    while len(answered) < 5:
        message = read()
        if "method" not in message and str(message.get("id")).startswith("p"):
            answered.add(message["id"])
    say(session_id, "5 answered")


def linger(session_id: str) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    record = os.environ["HOSTILE_RECORD"]
    with open(record + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()} {tempfile.gettempdir()}")
    os.replace(record + ".tmp", record)
    while True:  # stdin EOF changes nothing
        time.sleep(60)


def orphans(session_id: str) -> None:
    record = os.environ["HOSTILE_RECORD"]
    subprocess.Popen([sys.executable, "-c", RECORD_PID + SLEEPER, record + ".1"], start_new_session=True)
    double_fork(record + ".2", dict(os.environ))
    while not (os.path.exists(record + ".1") and os.path.exists(record + ".2")):
        time.sleep(0.05)
    os._exit(1)  # the crash


def escape(session_id: str) -> None:
    """A double-forked grandchild with an empty environment (nothing marks it as the agent's),
    holding the agent's stdout and stderr open; then the crash."""
    record = os.environ["HOSTILE_RECORD"]
    double_fork(record + ".1", {})
    while not os.path.exists(record + ".1"):
        time.sleep(0.05)
    os._exit(1)


def double_fork(record: str, env: dict[str, str]) -> None:
    """The middle process exits at once, orphaning the grandchild in a session of its own."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execve(sys.executable, [sys.executable, "-c", RECORD_PID + SLEEPER, record], env)
        os._exit(0)


def nest(session_id: str) -> None:
    path = os.environ["HOSTILE_ROOT"]
    for _ in range(int(os.environ["HOSTILE_DEPTH"])):
        path = os.path.join(path, "d")
        os.mkdir(path)
    with open(os.path.join(path, "f"), "w", encoding="utf-8") as handle:
        handle.write("at the bottom\n")
    say(session_id, REPLY)


ACTIONS = {
    "terminal": terminal,
    "deep": deep,
    "tool-content": tool_content,
    "reads": reads,
    "permissions": permissions,
    "linger": linger,
    "orphans": orphans,
    "escape": escape,
    "nest": nest,
}

if __name__ == "__main__":
    main()
