from scores import average, report


def test_empty():
    assert average([]) == 0.0


def test_values():
    assert average([1, 2]) == 1.5


def test_report():
    assert report([]) == "0 scores, average 0.0"
    assert report([4, 5]) == "2 scores, average 4.5"
