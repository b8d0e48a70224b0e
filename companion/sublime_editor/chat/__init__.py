"""The chat with an ACP agent in Sublime: its view, prompt, history, sessions, agents, checkpoints and
the restore of a prompt's checkpoint. Above the base and changes/."""
