"""The README's Troubleshooting quotes Gemini CLI's messages as the real client prints them, in every
release the README says works: a user searching the README for what their terminal shows finds it."""

from __future__ import annotations

import glob
import os
import re

from tests.conformance.harness import Release
from tests.project.test_docs import readme, section

# The example values the README fills into the client's templates.
EXAMPLES = r"Sublime Text|/home/ada/project"


def quoted_messages() -> list[str]:
    text = section(readme(), "Troubleshooting")
    return [m.rstrip(" …") for m in re.findall(r"^🔴 Disconnected: (.+)$", text, re.M)]


def client_source(release: Release) -> str:
    files = glob.glob(os.path.join(release.core_dir, "dist", "src", "ide", "*.js"))
    return "\n".join(open(path, encoding="utf-8").read() for path in files if not path.endswith(".test.js"))


def test_each_disconnected_message_in_the_readme_is_the_clients_own(release: Release) -> None:
    source = client_source(release)
    messages = quoted_messages()
    assert len(messages) >= 4
    for message in messages:
        for fragment in re.split(EXAMPLES, message):
            assert fragment.strip() in source, f"{release}: not the client's words: {fragment!r} in {message!r}"
    # Directory mismatch is quoted with the folder list the client appends.
    assert any(m.startswith("Directory mismatch.") for m in messages)
