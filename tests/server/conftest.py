"""Fixtures of the server tests that start no server."""

from __future__ import annotations

import pytest


class Clock:
    """A clock the test moves."""

    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(1_800_000_000.0)
