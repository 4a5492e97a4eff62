"""Hypothesis profiles for the fuzz suite (tests/fuzz/), and the count of inputs it tried.

``ci`` (the default, run by ``make test``): a few seconds per property. ``fuzz``
(``HYPOTHESIS_PROFILE=fuzz``, run by ``make fuzz``): minutes of search over the same properties,
with the example database kept in ``.hypothesis/`` so a failure found once is tried first the
next time. Every example also runs under a hard time limit (``support.no_hang``), so a hang is a
failure, not a stuck suite; the per-example ``deadline`` is kept loose because the machine is
shared and a slow example is not a bug, a stuck one is.

Each property's inner test (hypothesis' ``.hypothesis.inner_test``, the hook it offers for
wrapping) is wrapped to count the inputs it was called with (generated, replayed from the
database and shrunk alike); the terminal summary prints the sum, the figure ``make fuzz`` is held
to (at least 100,000 in the ``fuzz`` profile: 750 a property, ten times that for the cheap ones,
``support.examples``).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections import Counter
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=50,
    deadline=timedelta(seconds=2),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "fuzz",
    max_examples=750,
    deadline=timedelta(seconds=5),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

INPUTS: Counter[str] = Counter()
"""Inputs each property of this run was called with, by test id."""


def _counted(inner, name: str):
    if inspect.iscoroutinefunction(inner):
        @functools.wraps(inner)
        async def counting_async(*args, **kwargs):
            INPUTS[name] += 1
            return await inner(*args, **kwargs)
        return counting_async

    @functools.wraps(inner)
    def counting(*args, **kwargs):
        INPUTS[name] += 1
        return inner(*args, **kwargs)
    return counting


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        handle = getattr(getattr(item, "obj", None), "hypothesis", None)
        if handle is not None and item.nodeid.startswith("tests/fuzz/"):
            handle.inner_test = _counted(handle.inner_test, item.nodeid)


def pytest_terminal_summary(terminalreporter) -> None:
    if INPUTS:
        profile = os.environ.get("HYPOTHESIS_PROFILE", "ci")
        terminalreporter.write_line(
            f"fuzz: {sum(INPUTS.values()):,} generated inputs across {len(INPUTS)} properties (profile {profile})"
        )
