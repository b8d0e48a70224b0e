"""The Claude Code harness keeps the real client offline: every switch it sets is one the pinned
binary reads (the literal `process.env.<NAME>` read is in its embedded JS), so a run never reaches
the network at start-up (2.1.332 otherwise installs the official plugin marketplace: downloads and
a git clone)."""

from __future__ import annotations

import mmap

import pytest

from tests.conformance.claude_harness import claude_binary, claude_env

OFFLINE_SWITCHES = (
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "DISABLE_AUTOUPDATER",
)


@pytest.mark.parametrize("name", OFFLINE_SWITCHES)
def test_the_harness_sets_each_offline_switch_the_pinned_client_reads(name: str) -> None:
    assert claude_env("/config", 1, "http://127.0.0.1:2")[name] == "1"
    with open(claude_binary(), "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as binary:
        # The bundle reads environment variables as `s.<NAME>` (s = process.env), e.g.
        # `function Hyn(){return s.CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL}` in 2.1.331.
        assert binary.find(f".{name}".encode()) != -1, f"the pinned Claude Code never reads {name}"
