"""Fixtures of the NRI plugin's tests."""

from __future__ import annotations

import pytest

from tests.nri.harness import Harness


@pytest.fixture
def harness():
    made = []

    def make(**kwargs) -> Harness:
        made.append(Harness(**kwargs))
        return made[-1]
    yield make
    for h in made:
        h.close()
