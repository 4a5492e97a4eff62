from chunks import chunked


def test_uneven():
    assert chunked([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]


def test_even():
    assert chunked([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]


def test_smaller_than_size():
    assert chunked([1], 3) == [[1]]


def test_empty():
    assert chunked([], 3) == []
