"""The transcript a rewind carries to its new session (acp/prompt/rewind.py): bounded, newest turns kept,
older ones counted in a marker; the turns after prompt N are not in it."""

from __future__ import annotations

import pytest

from companion.acp.prompt.rewind import HEAD, Transcript, Turn, seed_note


def test_a_short_conversation_goes_whole_with_no_cut_marker() -> None:
    note = seed_note([Turn("Fix the typo", "Fixed it."), Turn("Now the test", "Added one.")])
    assert note.startswith(HEAD)
    assert " cut]" not in note
    assert note.index("Fix the typo") < note.index("Fixed it.") < note.index("Now the test") < note.index("Added one.")


def test_a_long_conversation_keeps_its_newest_turns_within_the_bound_and_counts_the_cut_ones() -> None:
    turns = [Turn(f"prompt {n} " + "p" * 900, f"reply {n} " + "r" * 900) for n in range(1, 41)]
    note = seed_note(turns, 32_000)
    assert len(note) <= 32_000
    assert "prompt 40 " in note and "reply 40 " in note  # the newest turn is there
    kept = sum(f"prompt {n} " in note for n in range(1, 41))
    assert 10 < kept < 40
    assert f"[… {40 - kept} earlier turns cut]" in note
    assert "prompt 1 " not in note


def test_a_single_turn_longer_than_the_bound_keeps_its_end() -> None:
    note = seed_note([Turn("old", "x"), Turn("big " + "a" * 5000, "the end of the reply")], 1000)
    assert len(note) <= 1000
    assert note.endswith("the end of the reply")
    assert "[… 1 earlier turn cut]" in note


def test_the_transcript_cut_before_prompt_n_keeps_the_earlier_turns_and_gives_back_the_whole() -> None:
    transcript = Transcript()
    for n in (1, 2, 3):
        transcript.prompted(f"prompt {n}")
        transcript.replied(f"reply {n}")
    assert transcript.prompt_text(2) == "prompt 2"
    whole = transcript.cut_before(2)
    assert [t.prompt for t in whole] == ["prompt 1", "prompt 2", "prompt 3"]
    assert transcript.turns == [Turn("prompt 1", "reply 1", 1)]
    transcript.prompted("prompt 4")  # the chat's numbers go on, as its checkpoints' do
    assert transcript.prompt_text(4) == "prompt 4"
    with pytest.raises(ValueError, match=r"no prompt 2 \(its prompts: 1, 4"):
        transcript.prompt_text(2)
