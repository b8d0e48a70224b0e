"""The user's reason for a rejection, for the agent to hear. The protocol's answer to a permission
request is only an option id, so the reason follows it as words: a prompt sent at once where the
agent queues prompts (it advertises `agentCapabilities._meta.claudeCode.promptQueueing`, as
claude-agent-acp does), else a note leading the user's next prompt (ChatThread.add_note)."""

from __future__ import annotations

REASON_CHARS = 4000  # a reason is a sentence or a paragraph, not a file


def rejection_note(what: str, reason: str) -> str:
    """The words the agent gets: `what` it asked ("your edit of foo.py"), and why the user said no."""
    return f"[Note from the editor: the user rejected {what}: {reason.strip()[:REASON_CHARS]}]"
