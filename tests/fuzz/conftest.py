"""Hypothesis profiles for the fuzz suite (tests/fuzz/).

``ci`` (the default, run by ``make test``): a few seconds per property. ``fuzz``
(``HYPOTHESIS_PROFILE=fuzz``, run by ``make fuzz``): minutes of search over the same properties,
with the example database kept in ``.hypothesis/`` so a failure found once is tried first the
next time. Every example also runs under a hard time limit (``support.no_hang``), so a hang is a
failure, not a stuck suite; the per-example ``deadline`` is kept loose because the machine is
shared and a slow example is not a bug, a stuck one is.
"""

from __future__ import annotations

import os
from datetime import timedelta

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
    max_examples=2000,
    deadline=timedelta(seconds=5),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
