"""Rewind to Here (under each prompt of a chat, beside Restore checkpoint): once the restore of the
checkpoint before prompt N is written (restore.py, with its conflicts, confirmation and undo), the
chat's session is replaced by a new session of the same agent whose first prompt carries the turns
before prompt N (acp/prompt/rewind.py), prompt N's text goes back into the prompt to edit and send again,
and the conversation above says it was rewound. Undo rewind brings back the files (the restore's
undo) and the earlier session (`session/load`, where the agent can). Main thread, except the
session's calls, which run on the chat's loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import sessions as chat_sessions

if TYPE_CHECKING:
    from ..sessions import Chat


def rewound_files(chat: Chat, number: int) -> None:
    """The files are back to before prompt `number`: now the conversation."""
    if chat.ended or chat.session is None:
        chat.panel.notice("The files were restored; the agent has stopped, so there is no conversation to rewind.")
        return
    session = chat.session
    chat.busy = True  # no prompt goes to the old session meanwhile

    async def rewind() -> tuple[str, str]:
        text = await session.rewind(number)
        return text, session.session_id

    def done(result: tuple[str, str] | None, error: BaseException | None) -> None:
        chat.busy = False
        if result is None:
            chat.panel.notice(f"The files were restored, but the conversation was not rewound: {error}", "warning")
            return
        text, session_id = result
        chat.session_id = session_id
        chat_sessions.remember_session(chat, session_id)
        chat.panel.notice(f"Rewound to prompt {number}; the conversation before it goes with your next prompt.")
        _put_back(chat, number, text)

    chat._submit(rewind, done)  # pyright: ignore[reportPrivateUsage]


def _put_back(chat: Chat, number: int, text: str) -> None:
    """Prompt `number`'s text in the prompt, to edit and send; what the user had typed stays after it."""
    typed = chat.panel.prompt_text()
    if typed.strip():
        chat.panel.set_prompt(f"{text}\n\n{typed}")
        chat.panel.notice(f"Prompt {number} is back in the prompt; what you had typed there is kept after it.")
    else:
        chat.panel.set_prompt(text)
    chat.panel.focus_prompt()


def undone_files(chat: Chat) -> None:
    """The rewind's files are back: now its conversation (`session/load` of the earlier session)."""
    session = chat.session
    if chat.ended or session is None or not session.rewinds:
        return
    chat.busy = True

    async def undo() -> tuple[bool, str]:
        loaded = await session.undo_rewind()
        return loaded, session.session_id

    def done(result: tuple[bool, str] | None, error: Any) -> None:
        chat.busy = False
        if result is None:
            chat.panel.notice(f"The files are back, but the earlier conversation was not: {error}", "warning")
            return
        loaded, session_id = result
        if loaded:
            chat.session_id = session_id
            chat_sessions.remember_session(chat, session_id)
            chat.panel.notice("The earlier conversation is back: your next prompt continues it.")

    chat._submit(undo, done)  # pyright: ignore[reportPrivateUsage]
