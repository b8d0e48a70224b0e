"""The operating system as the core needs it: processes and their trees, the user's paths and
cache, private folders for token-bearing files, pywin32 on Windows. Imports nothing of the package."""
