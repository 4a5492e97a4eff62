from calc import clamp, mean, median


def test_odd_length():
    assert median([3, 1, 2]) == 2


def test_even_length():
    assert median([4, 1, 3, 2]) == 2.5


def test_single_value():
    assert median([7]) == 7


def test_input_not_changed():
    values = [3, 1, 2]
    median(values)
    assert values == [3, 1, 2]


def test_existing_functions_unchanged():
    assert mean([1, 2, 3]) == 2
    assert clamp(5, 0, 3) == 3
