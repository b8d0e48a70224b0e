"""Gemini Companion core: the MCP server Gemini CLI talks to, free of any Sublime import.

Everything in this package except `sublime_editor/` runs in a plain Python process, so the same
code serves the Sublime adapter, the headless runner (`python -m companion serve`) and the tests.
Imports inside the package are relative because Sublime imports it as "Gemini Companion".
"""

__version__ = "0.1.0"
