"""Every Command and Listener plugin.py exports, grouped by what the user works on: the review,
the chat, the agents' terminals, turn changes, status, connecting another agent, the project's
events. The top floor of the adapter: nothing imports it but plugin.py."""
