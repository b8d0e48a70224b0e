"""Each test gets a fresh fake editor; the test thread plays Sublime's main thread."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sublime_fake import _state, control

control.install()


@pytest.fixture
def host(tmp_path: object) -> Iterator[_state.Host]:
    current = control.reset(str(tmp_path))
    yield current
    control.shutdown()
