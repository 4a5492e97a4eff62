from inventory import names, total_value

STOCK = [
    {"name": "pen", "price": 1.5, "quantity": 4},
    {"name": "book", "price": 12.0, "quantity": 2},
    {"name": "lamp", "price": 30.0, "quantity": 0},
    {"name": "cup", "price": 5.0, "quantity": -1},
]


def test_total():
    assert total_value(STOCK) == 30.0


def test_empty():
    assert total_value([]) == 0


def test_names_unchanged():
    assert names(STOCK) == ["pen", "book", "lamp", "cup"]
