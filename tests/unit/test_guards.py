"""Guards that stop a run going nowhere: rejections, repeated calls, failed edits."""

from __future__ import annotations

from totem_engine.turn.guards import MAX_FAILED_EDITS, MAX_REJECTIONS, REPEAT_COUNT, REPEAT_WINDOW, Guards, call_key


def key(tool: str = "read", path: str = "a.py", output: str = "1\tx") -> str:
    return call_key(tool, {"path": path}, output)


def test_constants_match_the_rules():
    assert (MAX_REJECTIONS, REPEAT_COUNT, REPEAT_WINDOW, MAX_FAILED_EDITS) == (3, 3, 6, 4)


# --- rejections -----------------------------------------------------------------------------


def test_three_rejections_in_a_row_stop():
    guards = Guards()
    assert guards.record_permission(False) is None
    assert guards.record_permission(False) is None
    reason = guards.record_permission(False)
    assert reason is not None
    assert "rejected" in reason


def test_an_allow_in_between_resets_rejections():
    guards = Guards()
    guards.record_permission(False)
    guards.record_permission(False)
    assert guards.record_permission(True) is None
    assert guards.record_permission(False) is None
    assert guards.record_permission(False) is None
    assert guards.record_permission(False) is not None


# --- repeated calls -------------------------------------------------------------------------


def test_same_call_same_result_three_times_in_a_row_stops():
    guards = Guards()
    assert guards.record_call(key(), changed_files=False) is None
    assert guards.record_call(key(), changed_files=False) is None
    reason = guards.record_call(key(), changed_files=False)
    assert reason is not None
    assert "read" in reason  # names the tool
    assert "\x00" not in reason


def test_three_times_within_six_calls_interleaved_stops():
    guards = Guards()
    sequence = [key(), key(path="b.py"), key(), key(tool="grep"), key()]
    reasons = [guards.record_call(k, changed_files=False) for k in sequence]
    assert reasons[:4] == [None] * 4
    assert reasons[4] is not None


def test_three_times_spread_wider_than_the_window_does_not_stop():
    guards = Guards()
    others = iter(key(path=f"other{i}.py") for i in range(20))
    # A . . A . . . A : the first A has left the six-call window by the third.
    sequence = [key(), next(others), next(others), key(), next(others), next(others), next(others), key()]
    assert all(guards.record_call(k, changed_files=False) is None for k in sequence)


def test_a_file_changing_call_resets_the_repeat_window():
    guards = Guards()
    guards.record_call(key(), changed_files=False)
    guards.record_call(key(), changed_files=False)
    assert guards.record_call(key(tool="write"), changed_files=True) is None
    assert guards.record_call(key(), changed_files=False) is None
    assert guards.record_call(key(), changed_files=False) is None
    assert guards.record_call(key(), changed_files=False) is not None


def test_a_file_changing_call_is_never_a_repeat():
    guards = Guards()
    write = key(tool="write", output="Wrote a.py (1 lines).")
    assert all(guards.record_call(write, changed_files=True) is None for _ in range(5))


def test_same_call_with_a_different_result_does_not_count():
    guards = Guards()
    keys = [key(output="1\tv1"), key(output="1\tv2"), key(output="1\tv3"), key(output="1\tv4")]
    assert all(guards.record_call(k, changed_files=False) is None for k in keys)


def test_call_key_identity():
    # Argument order does not matter; arguments and output do.
    assert call_key("read", {"path": "a", "limit": 5}, "x") == call_key("read", {"limit": 5, "path": "a"}, "x")
    assert call_key("read", {"path": "a"}, "x") != call_key("read", {"path": "b"}, "x")
    assert call_key("read", {"path": "a"}, "x") != call_key("read", {"path": "a"}, "y")
    assert call_key("read", {"path": "a"}, "x") != call_key("grep", {"path": "a"}, "x")


# --- failed edits ---------------------------------------------------------------------------


def test_four_failed_edits_in_a_row_stop():
    guards = Guards()
    assert [guards.record_edit(False) for _ in range(3)] == [None, None, None]
    reason = guards.record_edit(False)
    assert reason is not None
    assert "edit" in reason


def test_a_landed_edit_resets_failed_edits():
    guards = Guards()
    for _ in range(3):
        guards.record_edit(False)
    assert guards.record_edit(True) is None
    assert [guards.record_edit(False) for _ in range(3)] == [None, None, None]
    assert guards.record_edit(False) is not None


def test_guards_are_independent():
    guards = Guards()
    guards.record_permission(False)
    guards.record_permission(False)
    for _ in range(3):
        guards.record_edit(False)
    guards.record_call(key(), changed_files=False)
    # One more of a different kind trips nothing.
    assert guards.record_call(key(), changed_files=False) is None
    assert guards.record_edit(True) is None
    assert guards.record_permission(True) is None
