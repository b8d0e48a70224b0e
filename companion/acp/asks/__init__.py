"""What the agent asks of the user outside a permission, and what the user sets for it: a login
(auth.py), a form or a URL (elicitation.py), the session's config options (config_options.py).
Each drives the ChatView's questions (acp/view.py); none imports the SDK."""
