"""Which turns start in code mode (turn/scripts.py ``wants_scripts``), and what the record keeps
of it (providers/capabilities.py ``with_evidence``)."""

from __future__ import annotations

import pytest

from totem_engine.providers.capabilities import CapabilityRecord, with_evidence
from totem_engine.turn.scripts import wants_scripts

RELIABLE = CapabilityRecord()
UNRELIABLE = CapabilityRecord(tools_reliable=False)
LEARNED = CapabilityRecord(code_mode=True)


@pytest.mark.parametrize(
    "code_mode, record, small, expected",
    [
        ("auto", RELIABLE, False, False),
        ("auto", UNRELIABLE, False, True),
        ("auto", UNRELIABLE, True, False),  # a small model keeps its whole-file blocks
        ("auto", LEARNED, True, True),  # unless scripts worked for it
        ("always", RELIABLE, False, True),
        ("never", LEARNED, False, False),
    ],
)
def test_code_mode_follows_the_config_then_the_record(code_mode, record, small, expected):
    assert wants_scripts(code_mode, record, small=small) is expected


def test_a_learned_code_mode_survives_a_fresh_record():
    remembered = CapabilityRecord(code_mode=True, evidence=True)
    assert with_evidence(CapabilityRecord(), remembered).code_mode is True
    assert with_evidence(CapabilityRecord(), CapabilityRecord(code_mode=True)).code_mode is False  # not evidence
