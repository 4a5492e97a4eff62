"""UnmadeChange: a small model that says what it would change, and stops."""

from __future__ import annotations

import pytest

from totem_engine.turn.unmade import UnmadeChange, asks_for_a_change


@pytest.mark.parametrize(
    "text",
    [
        "I added the function to calc.py.",
        "The `low_stock` function has been added to report.py.",
        "The main.py file needs changes: we need to import parse_date from dates.py.",
        "To fix this, change the line `return a - b`.",
        "The formula should be changed to use 9 / 5.",
        "`utils.py` must be imported in `main.py`.",
    ],
)
def test_a_change_claimed_or_announced_but_not_made_is_asked_for_once(text):
    unmade = UnmadeChange()
    assert unmade.nudge(text, changed=False, prose_edit=False)
    assert not unmade.nudge(text, changed=False, prose_edit=False)  # once a turn


@pytest.mark.parametrize("text", ["It holds 42.", "calc.py adds and subtracts numbers.", "The tests pass."])
def test_an_answer_is_not_a_missing_change(text):
    assert not UnmadeChange().nudge(text, changed=False, prose_edit=False)


def test_nothing_is_asked_after_a_change_and_a_prose_edit_counts():
    assert not UnmadeChange().nudge("I added it.", changed=True, prose_edit=False)
    assert UnmadeChange().nudge("Here:", changed=False, prose_edit=True)


@pytest.mark.parametrize(
    ("request_text", "asked"),
    [
        ("Add low_stock(inventory, threshold) to report.py.", True),
        ("In calc.py, add a function `median(values)`.", True),
        ("The tests in test_convert.py fail. Find the bug in convert.py and fix it.", True),
        ("Can you rename calc_area to rectangle_area?", True),
        ("How do I add a flag?", False),
        ("From how many units does the bulk discount start? Answer with the number.", False),
        ("What does calc.py do?", False),
    ],
)
def test_a_request_for_a_change_that_ends_with_none_is_asked_for_once(request_text, asked):
    reply = "The read call returned the content of report.py, unchanged."  # claims nothing
    unmade = UnmadeChange()
    assert asks_for_a_change(request_text) is asked
    assert unmade.nudge(reply, changed=False, prose_edit=False, requested=asks_for_a_change(request_text)) is asked
    if asked:
        assert not unmade.nudge(reply, changed=False, prose_edit=False, requested=True)  # once a turn
    assert not UnmadeChange().nudge(reply, changed=True, prose_edit=False, requested=True)
