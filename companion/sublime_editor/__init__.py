"""The Sublime Text adapter: the only code that imports `sublime` and `sublime_plugin`.

It turns editor events into each window's context, shows diff reviews, and starts one companion
server per window. `plugin.py` at the package root re-exports its commands and listeners.
"""
