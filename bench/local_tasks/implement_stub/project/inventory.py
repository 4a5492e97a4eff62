def total_value(items):
    """Total value of the stock: the sum of price * quantity over the items.

    Each item is a dict with the keys "name", "price" and "quantity". An item whose quantity
    is 0 or less adds nothing. An empty list is worth 0.
    """
    raise NotImplementedError


def names(items):
    return [item["name"] for item in items]
