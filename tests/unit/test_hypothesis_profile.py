"""tests/conftest.py turns hypothesis's per-example deadline off for every test: a busy machine must
not fail a property test (a pure split took 244 ms against the default 200 ms under a second run)."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st


def test_the_loaded_profile_has_no_deadline() -> None:
    assert settings.default is not None
    assert settings.default.deadline is None


@settings(max_examples=2)
@given(st.integers())
def test_an_example_slower_than_the_default_deadline_passes(value: int) -> None:
    """A test's own @settings (here only max_examples) keeps the profile's deadline=None."""
    time.sleep(0.25)  # over hypothesis's default 200 ms deadline
    assert isinstance(value, int)
