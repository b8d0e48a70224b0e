"""The agents in a Terminus terminal (Gemini CLI, Claude Code): opening one and waiting for it to be
live, and the checkpoints of what they change. Above the base, changes/ and chat/."""
