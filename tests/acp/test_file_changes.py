"""Reading the files one tool call changes (companion/acp/file_changes.py): Codex's apply_patch
format as its documentation shows it, a unified diff, a move; and what cannot be read is refused."""

from __future__ import annotations

import pytest

from companion.acp.edits import NotRebuildable
from companion.acp.file_changes import FileChange, file_changes

CODEX = """*** Begin Patch
*** Add File: hello.txt
+Hello world
*** Update File: src/app.py
*** Move to: src/main.py
@@ def greet():
-print("Hi")
+print("Hello, world!")
*** Delete File: obsolete.txt
*** Update File: tail.txt
@@
 last
+added
*** End of File
*** End Patch"""


def test_codex_patch_of_four_files_with_a_rename() -> None:
    changes = file_changes({"kind": "edit", "rawInput": {"command": ["apply_patch", CODEX]}})
    assert [c.describe() for c in changes] == [
        "hello.txt",
        "rename src/app.py → src/main.py",
        "delete obsolete.txt",
        "tail.txt",
    ]
    hello, app, gone, tail = changes
    assert hello.proposal("") == "Hello world\n"
    assert app.target == "src/main.py"
    assert app.proposal('def greet():\nprint("Hi")\n') == 'def greet():\nprint("Hello, world!")\n'
    assert gone.proposal("x\n") == ""
    assert tail.proposal("first\nlast\n") == "first\nlast\nadded\n"


def test_a_unified_diff_new_deleted_and_renamed_file() -> None:
    patch = (
        "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n"
        "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n"
        "diff --git a/x.txt b/y.txt\nsimilarity index 90%\nrename from x.txt\nrename to y.txt\n"
        "--- a/x.txt\n+++ b/y.txt\n@@ -1 +1 @@\n-x\n+y\n"
    )
    changes = file_changes({"rawInput": {"patchText": patch}})
    assert [c.describe() for c in changes] == ["new.txt", "delete old.txt", "rename x.txt → y.txt"]
    assert changes[0].proposal("") == "new\n" and changes[2].proposal("x\n") == "y\n"


def test_one_file_without_a_rename_is_left_to_edits_py() -> None:
    call = {"kind": "edit", "content": [{"type": "diff", "path": "a", "oldText": "x", "newText": "y"}]}
    assert file_changes(call) == []
    assert file_changes({"kind": "edit", "rawInput": {"file_path": "a", "content": "--- a\n+++ b\n"}}) == []


def test_a_move_without_source_or_target_and_a_hunk_without_context_are_refused() -> None:
    with pytest.raises(NotRebuildable, match="does not say from where to where"):
        file_changes({"kind": "move", "locations": [{"path": "a"}]})
    with pytest.raises(NotRebuildable, match="adds lines with no context"):
        file_changes({"rawInput": {"input": "*** Begin Patch\n*** Update File: a\n@@\n+x\n*** End Patch"}})
    change = FileChange("a", hunks=(("not there\n", "x\n"),))
    with pytest.raises(NotRebuildable, match="not in the file"):
        change.proposal("other\n")
