"""Gemini Companion for Sublime Text: the package's only plugin module.

Sublime reloads this file when the package changes; our submodules are dropped from `sys.modules`
first so a reload or upgrade runs the new code, never a mix of old and new.
"""

import sys

_PREFIX = f"{__package__}.companion"
for _name in [n for n in sys.modules if n == _PREFIX or n.startswith(_PREFIX + ".")]:
    del sys.modules[_name]

from .companion.sublime_editor.commands import (  # noqa: E402
    GeminiCompanionApplyCommand,
    GeminiCompanionNextChangeCommand,
    GeminiCompanionRejectCommand,
    GeminiCompanionReplaceTextCommand,
    GeminiCompanionSaveReviewCommand,
)
from .companion.sublime_editor.connect_command import GeminiCompanionConnectAgentCommand  # noqa: E402
from .companion.sublime_editor.lifecycle import plugin_loaded, plugin_unloaded  # noqa: E402
from .companion.sublime_editor.listeners import (  # noqa: E402
    GeminiCompanionContextListener,
    GeminiCompanionReviewListener,
)
from .companion.sublime_editor.status_commands import (  # noqa: E402
    GeminiCompanionStatusCommand,
    GeminiCompanionToggleSharingCommand,
)
from .companion.sublime_editor.terminal_commands import (  # noqa: E402
    GeminiCompanionOpenCliCommand,
    GeminiCompanionSendFileCommand,
    GeminiCompanionSendPathsCommand,
    GeminiCompanionSendSelectionCommand,
)
from .companion.sublime_editor.workspace_listener import GeminiCompanionWorkspaceListener  # noqa: E402

__all__ = [
    "GeminiCompanionApplyCommand",
    "GeminiCompanionConnectAgentCommand",
    "GeminiCompanionContextListener",
    "GeminiCompanionNextChangeCommand",
    "GeminiCompanionOpenCliCommand",
    "GeminiCompanionRejectCommand",
    "GeminiCompanionReplaceTextCommand",
    "GeminiCompanionReviewListener",
    "GeminiCompanionSaveReviewCommand",
    "GeminiCompanionSendFileCommand",
    "GeminiCompanionSendPathsCommand",
    "GeminiCompanionSendSelectionCommand",
    "GeminiCompanionStatusCommand",
    "GeminiCompanionToggleSharingCommand",
    "GeminiCompanionWorkspaceListener",
    "plugin_loaded",
    "plugin_unloaded",
]
