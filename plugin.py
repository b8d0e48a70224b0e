"""Gemini Companion for Sublime Text: the package's only plugin module.

Sublime reloads this file when the package changes; our submodules are dropped from `sys.modules`
first so a reload or upgrade runs the new code, never a mix of old and new.

This file stays in Python 3.3 syntax (no f-strings, no annotations): a build older than 4205 has no
Python 3.14 plugin host and runs the package on Python 3.3, where all it can do is say so.
"""

import sys

import sublime

MIN_BUILD = 4205

if int(sublime.version()) < MIN_BUILD:

    def plugin_loaded():
        build = sublime.version()
        sublime.status_message(
            "Gemini Companion needs Sublime Text build {} or newer (this is {}).".format(MIN_BUILD, build)
        )
        print(
            "Gemini Companion: this is Sublime Text build {0}; the companion needs build {1} or newer, whose "
            "Python 3.14 plugin host can run the MCP server. Update Sublime Text (Help > Check for Updates, or "
            "the dev channel before build 4213 is stable for you); the package stays inactive until "
            "then.".format(build, MIN_BUILD)
        )

    def plugin_unloaded():
        pass

else:
    _PREFIX = "{}.companion".format(__package__)
    # list() copies the keys in one step: other threads (other packages', our old loop thread) import
    # meanwhile, and a Python-level walk of the live dict fails when its size changes under it.
    # pop, not del: an import failing on another thread meanwhile (its package just dropped here)
    # takes its own half-made module out of sys.modules before we reach its name.
    for _name in [n for n in list(sys.modules) if n == _PREFIX or n.startswith(_PREFIX + ".")]:
        sys.modules.pop(_name, None)

    from .companion.sublime_editor.commands.changes import (
        GeminiCompanionChangeSetListener,
        GeminiCompanionChangeSetOpenCommand,
        GeminiCompanionRestoreCheckpointCommand,
        GeminiCompanionReviewCheckpointChangesCommand,
        GeminiCompanionReviewTurnChangesCommand,
        GeminiCompanionStartCheckpointCommand,
    )
    from .companion.sublime_editor.commands.chat import (
        GeminiCompanionChatCancelCommand,
        GeminiCompanionChatCancelQueuedCommand,
        GeminiCompanionChatFollowAgentCommand,
        GeminiCompanionChatModeCommand,
        GeminiCompanionChatModelCommand,
        GeminiCompanionChatOptionsCommand,
        GeminiCompanionContinueChatCommand,
        GeminiCompanionNewChatCommand,
        GeminiCompanionPastChatsCommand,
        GeminiCompanionShowTerminalOutputCommand,
    )
    from .companion.sublime_editor.commands.chat_view import (
        GeminiCompanionChatCopyCommand,
        GeminiCompanionChatEraseCommand,
        GeminiCompanionChatHistoryCommand,
        GeminiCompanionChatInsertCommand,
        GeminiCompanionChatListener,
        GeminiCompanionChatNoopCommand,
        GeminiCompanionChatSendCommand,
        GeminiCompanionTerminalPanelWriteCommand,
    )
    from .companion.sublime_editor.commands.comments import (
        GeminiCompanionCommentCommand,
        GeminiCompanionSendCommentsCommand,
    )
    from .companion.sublime_editor.commands.connect import GeminiCompanionConnectAgentCommand
    from .companion.sublime_editor.commands.images import GeminiCompanionSendImageFileCommand
    from .companion.sublime_editor.commands.listeners import (
        GeminiCompanionContextListener,
        GeminiCompanionReviewListener,
    )
    from .companion.sublime_editor.commands.mentions import GeminiCompanionChatMentionListener
    from .companion.sublime_editor.commands.project import GeminiCompanionWorkspaceListener
    from .companion.sublime_editor.commands.review import (
        GeminiCompanionApplyCommand,
        GeminiCompanionNextChangeCommand,
        GeminiCompanionRejectCommand,
        GeminiCompanionReplaceTextCommand,
        GeminiCompanionSaveReviewCommand,
    )
    from .companion.sublime_editor.commands.status import (
        GeminiCompanionStatusCommand,
        GeminiCompanionToggleSharingCommand,
    )
    from .companion.sublime_editor.commands.terminal import (
        GeminiCompanionOpenClaudeCommand,
        GeminiCompanionOpenCliCommand,
        GeminiCompanionSendFileCommand,
        GeminiCompanionSendPathsCommand,
        GeminiCompanionSendSelectionCommand,
        GeminiCompanionTerminalFocusListener,
    )
    from .companion.sublime_editor.lifecycle import plugin_loaded, plugin_unloaded

__all__ = [
    "GeminiCompanionApplyCommand",
    "GeminiCompanionChangeSetListener",
    "GeminiCompanionChangeSetOpenCommand",
    "GeminiCompanionChatCancelCommand",
    "GeminiCompanionChatCancelQueuedCommand",
    "GeminiCompanionChatCopyCommand",
    "GeminiCompanionChatEraseCommand",
    "GeminiCompanionChatFollowAgentCommand",
    "GeminiCompanionChatHistoryCommand",
    "GeminiCompanionChatInsertCommand",
    "GeminiCompanionChatListener",
    "GeminiCompanionChatMentionListener",
    "GeminiCompanionChatModeCommand",
    "GeminiCompanionChatModelCommand",
    "GeminiCompanionChatNoopCommand",
    "GeminiCompanionChatOptionsCommand",
    "GeminiCompanionChatSendCommand",
    "GeminiCompanionCommentCommand",
    "GeminiCompanionConnectAgentCommand",
    "GeminiCompanionContextListener",
    "GeminiCompanionContinueChatCommand",
    "GeminiCompanionNewChatCommand",
    "GeminiCompanionNextChangeCommand",
    "GeminiCompanionOpenClaudeCommand",
    "GeminiCompanionOpenCliCommand",
    "GeminiCompanionPastChatsCommand",
    "GeminiCompanionRejectCommand",
    "GeminiCompanionReplaceTextCommand",
    "GeminiCompanionRestoreCheckpointCommand",
    "GeminiCompanionReviewCheckpointChangesCommand",
    "GeminiCompanionReviewListener",
    "GeminiCompanionReviewTurnChangesCommand",
    "GeminiCompanionSaveReviewCommand",
    "GeminiCompanionSendCommentsCommand",
    "GeminiCompanionSendFileCommand",
    "GeminiCompanionSendImageFileCommand",
    "GeminiCompanionSendPathsCommand",
    "GeminiCompanionSendSelectionCommand",
    "GeminiCompanionShowTerminalOutputCommand",
    "GeminiCompanionStartCheckpointCommand",
    "GeminiCompanionStatusCommand",
    "GeminiCompanionTerminalFocusListener",
    "GeminiCompanionTerminalPanelWriteCommand",
    "GeminiCompanionToggleSharingCommand",
    "GeminiCompanionWorkspaceListener",
    "plugin_loaded",
    "plugin_unloaded",
]
