"""The window's server (the socket, uvicorn, Reviews, the context debounce; it mounts the rooms), the
shapes rooms and window meet through (window.py), and the socket's guards: token and Host checks,
connection limits, the WebSocket protocol, request ids, rate-limited logs. Imports core/files and
the editor model (core/*.py); never core/history."""
