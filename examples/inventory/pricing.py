"""Prices of an order: bulk discount, then VAT."""

BULK_MIN_UNITS = 144  # a gross: from this many units of one item, the bulk discount applies
BULK_DISCOUNT = 0.08
VAT_RATE = 0.21


def order_price(unit_price: float, units: int) -> float:
    """The price of `units` units, VAT included, rounded to the cent."""
    net = unit_price * units
    if units >= BULK_MIN_UNITS:
        net *= 1 - BULK_DISCOUNT
    return round(net * (1 + VAT_RATE), 2)
