"""Every conformance test that asks for `release` runs against each Gemini CLI the README names: the
pinned one and the oldest it says works."""

from __future__ import annotations

import pytest

from tests.conformance.harness import RELEASES, Release


@pytest.fixture(params=RELEASES, ids=str)
def release(request: pytest.FixtureRequest) -> Release:
    return request.param
