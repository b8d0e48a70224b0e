"""The README's links and the doctor's links into its Troubleshooting section lead somewhere."""

from __future__ import annotations

import os
import re

from companion import doctor
from companion.core.troubleshooting import PROJECT_URL
from tools.libraries import canonical, runtime_pins

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def readme() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        return handle.read()


def github_anchor(heading: str) -> str:
    """The id GitHub gives a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def section(text: str, name: str) -> str:
    """The `## name` section of `text`, up to the next `## ` heading (code blocks are not headings)."""
    lines, inside, in_code = [], False, False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if not in_code and line.startswith("## "):
            if inside:
                break
            inside = line == f"## {name}"
        if inside:
            lines.append(line)
    return "\n".join(lines) + "\n"


def anchors(text: str, name: str | None = None) -> set[str]:
    """The anchors of the headings of `text`, or only of those inside its `## name` section."""
    if name is not None:
        text = section(text, name)
    found = set()
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            found.add(github_anchor(line.lstrip("#")))
    return found


def test_github_anchor_follows_githubs_rules() -> None:
    assert github_anchor("Other agents (Claude Desktop, Claude Code)") == "other-agents-claude-desktop-claude-code"
    assert github_anchor("gemini is not found") == "gemini-is-not-found"
    assert github_anchor("Containers, SSH and WSL") == "containers-ssh-and-wsl"


def test_every_link_inside_the_readme_has_its_heading() -> None:
    text = readme()
    targets = set(re.findall(r"\]\(#([^)]+)\)", text))
    assert targets, "the README links to its own sections"
    assert targets <= anchors(text), targets - anchors(text)


PINS = {canonical(name): version for name, version in runtime_pins().items()}


def every_problem() -> doctor.Facts:
    """Facts with every problem the report can find after the libraries (which end the list early)."""
    return doctor.Facts(
        build="4213",
        platform="osx arm64",
        python="3.14.0",
        server_state="listening",
        url="http://127.0.0.1:1/mcp",
        discovery=doctor.DiscoveryCheck(""),
        workspace_path="",
        clients=[],
        paused=True,
        last_context=[],
        libraries={name: PINS[name] for name in doctor.LIBRARIES},  # the pinned set: no library problem
        terminus_installed=False,
        tmpdir="/var/folders/xy/T",
    )


def linked_entries(text: str) -> list[str]:
    return re.findall(re.escape(PROJECT_URL) + r"#([\w-]+)", text)


def test_each_problem_the_doctor_finds_links_to_the_readme_entry_that_explains_it() -> None:
    facts = every_problem()
    found = doctor.problems(facts)
    assert len(found) >= 4
    troubleshooting, everywhere = anchors(readme(), "Troubleshooting"), anchors(readme())
    for problem in found:
        linked = linked_entries(problem)
        assert len(linked) == 1 and linked[0] in everywhere, problem
        if "Gemini CLI is connected" in problem or "Terminus" in problem or "no folder" in problem:
            assert linked[0] in troubleshooting, problem
    private = doctor.DiscoveryCheck("/tmp/gemini/ide/f.json", exists=True, owned_by_us=False, mode=0o644)
    for problem in doctor.problems(doctor.Facts(**{**facts.__dict__, "discovery": private})):
        assert len(linked_entries(problem)) == 1 and linked_entries(problem)[0] in everywhere, problem
    missing_libraries = doctor.problems(
        doctor.Facts(**{**facts.__dict__, "libraries": {name: None for name in doctor.LIBRARIES}})
    )
    assert linked_entries(missing_libraries[0]) == ["the-package-is-inactive"]


def test_the_report_shows_the_temporary_folder_and_links_the_whole_section() -> None:
    text = doctor.report(every_problem())
    assert "Temporary folder (Node's os.tmpdir() here): /var/folders/xy/T" in text
    assert "node -p \"require('os').tmpdir()\"" in text
    assert "troubleshooting" in linked_entries(text)
    assert set(linked_entries(text)) <= anchors(readme())


def test_the_readmes_doctor_sample_is_what_the_doctor_prints() -> None:
    facts = doctor.Facts(
        **{
            **every_problem().__dict__,
            "paused": False,
            "terminus_installed": True,
            "url": "http://127.0.0.1:40915/mcp",
            "tmpdir": "/tmp",
            "workspace_path": "/home/ada/project",
            "discovery": doctor.DiscoveryCheck(
                "/tmp/gemini/ide/gemini-ide-server-81234-40915.json", exists=True, owned_by_us=True, mode=0o600
            ),
        }
    )
    report = doctor.report(facts)
    sample = section(readme(), "Troubleshooting").split("```text\n", 1)[1].split("```", 1)[0]
    assert sample.startswith("# Gemini Companion: Status and Troubleshooting")
    for line in filter(None, sample.splitlines()):
        assert line.split(" …", 1)[0] in report, line
