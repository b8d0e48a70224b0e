"""What the user attaches to a prompt in Sublime: `@` mentions of files, folders, symbols and open
views (mentions.py), and images (images.py)."""
