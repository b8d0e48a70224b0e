"""Our own stand-in for Sublime Text 4213's `sublime` and `sublime_plugin` modules (see `control`)."""
