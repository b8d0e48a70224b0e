"""Reading the files one tool call changes (companion/acp/review/file_changes.py): Codex's apply_patch
format as its documentation shows it, a unified diff, a move; and what cannot be read is refused."""

from __future__ import annotations

import pytest

from companion.acp.review.edits import NotRebuildable
from companion.acp.review.file_changes import FileChange, file_changes

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


def codex_call(changes: dict[str, dict[str, object]], *blocks: tuple[str, str, str]) -> dict[str, object]:
    """A tool call as Codex sends it (observed): kind `edit`, a whole-text diff block per file it
    writes (a rename's names the target), and `rawInput.changes` keyed by each file's own path."""
    content = [{"type": "diff", "path": p, "oldText": old, "newText": new} for p, old, new in blocks]
    return {"kind": "edit", "content": content, "rawInput": {"call_id": "c1", "changes": changes}}


def test_codex_rename_with_an_edit_is_a_rename_whose_proposal_is_its_diff_block() -> None:
    changes = {
        "old.txt": {"type": "update", "unified_diff": "@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n", "move_path": "new.txt"}
    }
    call = codex_call(changes, ("new.txt", "one\r\ntwo\r\n", "one\nTWO\n"))
    [rename] = file_changes(call)
    assert (rename.describe(), rename.target) == ("rename old.txt → new.txt", "new.txt")
    assert rename.proposal("one\r\ntwo\r\n") == "one\r\nTWO\r\n"  # the file's own line endings kept
    assert rename.agent_text("one\r\ntwo\r\n") == "one\nTWO\n"  # what Codex writes itself


def test_codex_changes_without_diff_blocks_are_read_from_their_own_content_and_diff() -> None:
    changes = {
        "add.txt": {"type": "add", "content": "new\n"},
        "gone.txt": {"type": "delete", "content": "old\n"},
        "a.txt": {"type": "update", "unified_diff": "@@ -1,2 +1,2 @@\n one\n-two\n+2\n", "move_path": None},
        "b.txt": {"type": "update", "unified_diff": "@@ -1 +1 @@\n-x\n+y\n", "move_path": "c.txt"},
    }
    add, gone, a, b = file_changes(codex_call(changes))
    assert [c.describe() for c in (add, gone, a, b)] == ["add.txt", "delete gone.txt", "a.txt", "rename b.txt → c.txt"]
    assert (add.proposal(""), gone.proposal("old\n"), a.proposal("one\ntwo\n"), b.proposal("x\n")) == (
        "new\n",
        "",
        "one\n2\n",
        "y\n",
    )


def test_codex_one_file_update_with_its_diff_block_is_left_to_edits_py() -> None:
    changes = {"a.txt": {"type": "update", "unified_diff": "@@ -1 +1 @@\n-x\n+y\n", "move_path": None}}
    assert file_changes(codex_call(changes, ("a.txt", "x\n", "y\n"))) == []
    # and a `changes` of another shape is not Codex's: the diff blocks decide, as before
    other = {
        "kind": "edit",
        "rawInput": {"changes": ["a.txt"]},
        "content": [{"type": "diff", "path": "a.txt", "oldText": "x", "newText": "y"}],
    }
    assert file_changes(other) == []


NO_NEWLINE = "\\ No newline at end of file"


@pytest.mark.parametrize(
    ("hunk", "before", "after"),
    [
        (["@@ -1,2 +1,2 @@", " one", "-two", "+TWO", NO_NEWLINE], "one\ntwo\n", "one\nTWO"),
        (["@@ -1,2 +1,2 @@", " one", "-two", NO_NEWLINE, "+two"], "one\ntwo", "one\ntwo\n"),
        (["@@ -1,2 +1,2 @@", " one", "-two", NO_NEWLINE, "+TWO", NO_NEWLINE], "one\ntwo", "one\nTWO"),
    ],
    ids=["drops-final-newline", "adds-final-newline", "keeps-none"],
)
def test_a_patch_honours_no_newline_at_end_of_file(hunk: list[str], before: str, after: str) -> None:
    """A patched file ends as the patch says: the marker takes the break off the line before it, on
    the side (old, new or both for context) that line belongs to."""
    body = "\n".join(hunk) + "\n"
    [unified] = file_changes({"rawInput": {"patch": f"--- a/t.txt\n+++ b/t.txt\n{body}"}})
    codex = file_changes({"rawInput": {"input": f"*** Begin Patch\n*** Update File: t.txt\n{body}*** End Patch"}})
    assert unified.proposal(before) == after
    assert codex[0].proposal(before) == after


def test_a_new_file_without_a_final_newline_gets_none() -> None:
    patch = f"--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n{NO_NEWLINE}\n"
    [new] = file_changes({"rawInput": {"patch": patch}})
    assert new.proposal("") == "a\nb"


def test_a_one_file_patch_with_its_whole_text_diff_block_is_left_to_edits_py() -> None:
    """opencode's write of a new file: rawInput's `diff` has a `@@ -0,0` hunk and no /dev/null (a
    patch of lines with no context), the diff block the whole text: the diff block decides."""
    diff = "Index: n.txt\n===\n--- n.txt\n+++ n.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n"
    block = {"type": "diff", "path": "n.txt", "oldText": "", "newText": "a\nb\n"}
    call = {"kind": "edit", "content": [block], "rawInput": {"filePath": "n.txt", "content": "a\nb\n", "diff": diff}}
    assert file_changes(call) == []


def test_an_unreadable_patch_of_other_files_is_refused_even_with_a_diff_block() -> None:
    """The diff block stands for its patch only when the patch names that one file and no other."""
    diff = "--- n.txt\n+++ n.txt\n@@ -0,0 +1 @@\n+a\n--- other.txt\n+++ other.txt\n@@ -1 +1 @@\n-x\n+y\n"
    block = {"type": "diff", "path": "n.txt", "oldText": "", "newText": "a\n"}
    with pytest.raises(NotRebuildable):
        file_changes({"kind": "edit", "content": [block], "rawInput": {"diff": diff}})
