"""Logging in to an agent that needs it: the `authMethods` of its `initialize` answer, offered in
the chat when `session/new` (or `session/load`) fails for want of a login (ACP's `auth_required`,
-32000, or an error that says so), or before the session with `chat --login`.

Three kinds of method (the SDK's `AuthMethodAgent`, `TerminalAuthMethod`, `EnvVarAuthMethod`):
- `agent` (or no `type`): the agent logs in itself on `authenticate {methodId}` (it may open a
  browser and wait for the user);
- `terminal`: the agent's own program with the method's `args` and `env`, run where the user can
  answer it (Terminus in Sublime, the console headless); then the session is tried again;
- `env_var`: the user sets the variables (in the agent's `env` setting) and starts a new chat: the
  chat says which, never their values.
No SDK import here: the methods come as the answer's JSON (camelCase).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..view import ChatView, LoginCommand

AUTH_REQUIRED = -32000  # ACP's auth_required (acp.RequestError.auth_required)
AUTH_WORDS = ("auth", "api key", "login", "log in")
KINDS = ("agent", "terminal", "env_var")
MAX_LOGINS = 5  # logins tried in one start before the chat gives up (an agent that never accepts one)


@dataclass(frozen=True)
class EnvVar:
    name: str
    label: str | None = None
    optional: bool = False


@dataclass(frozen=True)
class AuthMethod:
    id: str
    name: str
    kind: str  # agent, terminal, env_var
    description: str | None = None
    args: tuple[str, ...] = ()  # terminal: appended to the agent's command
    env: Mapping[str, str] = field(default_factory=dict, repr=False)  # terminal: may hold secrets
    vars: tuple[EnvVar, ...] = ()  # env_var
    link: str | None = None  # env_var: where the user gets the value

    def label(self) -> list[str]:
        """The menu's two lines: the name, then what it does."""
        how = {
            "agent": "the agent logs you in",
            "terminal": "runs the agent's login in a terminal",
            "env_var": "set " + ", ".join(v.name for v in self.vars),
        }[self.kind]
        return [self.name, f"{self.description} — {how}" if self.description else how]


def auth_methods(raw: Sequence[Any]) -> list[AuthMethod]:
    """The methods we can offer, from `initialize`'s `authMethods` (model_dump by alias); one of a
    kind we do not know is left out."""
    found = []
    for data in raw:
        if not isinstance(data, dict) or not data.get("id"):
            continue
        kind = str(data.get("type") or "agent")
        if kind not in KINDS:
            continue
        env = data.get("env") if isinstance(data.get("env"), dict) else {}
        found.append(
            AuthMethod(
                id=str(data["id"]),
                name=str(data.get("name") or data["id"]),
                kind=kind,
                description=data.get("description") or None,
                args=tuple(str(a) for a in data.get("args") or ()),
                env={str(k): str(v) for k, v in (env or {}).items()},
                vars=tuple(
                    EnvVar(str(v["name"]), v.get("label"), bool(v.get("optional")))
                    for v in data.get("vars") or ()
                    if isinstance(v, dict) and v.get("name")
                ),
                link=data.get("link") or None,
            )
        )
    return found


def needs_login(code: int, message: str) -> bool:
    """An error that says the agent needs a login: words to that effect (auth_required's own message
    is "Authentication required"), or auth_required's code with no words at all. -32000 alone is not
    enough: it is also the code of the agents' other errors."""
    said = message.lower().strip()
    return any(word in said for word in AUTH_WORDS) or (code == AUTH_REQUIRED and said in ("", "no message"))


async def choose(view: ChatView, agent: str, methods: Sequence[AuthMethod], why: str) -> AuthMethod | None:
    """The method the user picks to log in to `agent`; None when they pick none."""
    title = f"{agent} needs a login ({why}): choose how" if why else f"Log in to {agent}: choose how"
    labels = [" — ".join(m.label()) for m in methods]
    index = await view.pick(title, labels)
    return methods[index] if index is not None and 0 <= index < len(methods) else None


def env_var_text(agent: str, method: AuthMethod) -> str:
    """What the user sets for an env_var method (the names, never values), and where."""
    names = ", ".join(f"{v.name} ({v.label})" if v.label else v.name for v in method.vars if not v.optional)
    optional = ", ".join(v.name for v in method.vars if v.optional)
    text = (
        f"To log in to {agent} with {method.name}, set {names or 'its variables'} in its environment "
        f'(the "env" of its entry in the setting "agents"; for `chat`, the shell\'s environment)'
    )
    text += f" (optional: {optional})" if optional else ""
    text += f", then start a new chat; get the value at {method.link}" if method.link else ", then start a new chat"
    return text + "."


def terminal_command(
    title: str, agent_argv: Sequence[str], method: AuthMethod, cwd: str, env: Mapping[str, str]
) -> LoginCommand:
    """The LoginCommand of a terminal method: the agent's program, its arguments, then the method's;
    `env` (the agent's own `env` setting) with the method's on top."""
    return LoginCommand(title, (*agent_argv, *method.args), cwd, {**env, **method.env})
