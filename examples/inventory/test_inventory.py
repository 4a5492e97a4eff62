import pytest

import report
from inventory import Inventory, Item
from pricing import order_price


def sample() -> Inventory:
    inventory = Inventory()
    inventory.add(Item("B-100", "Bolt", 0.10, 250))
    inventory.add(Item("N-200", "Nut", 0.05, 3))
    inventory.add(Item("S-300", "Screw", 0.08, 5))
    inventory.add(Item("W-400", "Washer", 0.02, 0))
    inventory.add(Item("H-500", "Hinge", 2.50, 4))
    return inventory


def test_adding_a_known_sku_adds_to_its_quantity():
    inventory = sample()
    inventory.add(Item("N-200", "Nut", 0.05, 10))
    assert inventory.items["N-200"].quantity == 13


def test_removing_more_than_in_stock_fails():
    with pytest.raises(ValueError):
        sample().remove("H-500", 5)


def test_total_value():
    assert sample().total_value() == pytest.approx(35.55)


def test_bulk_orders_get_the_discount():
    assert order_price(1.00, 100) == 121.00
    assert order_price(1.00, 144) == 160.30


def test_stock_report_lists_items_by_sku_then_the_total():
    lines = report.stock_report(sample()).splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["B-100", "H-500", "N-200", "S-300", "W-400"]
    assert lines[-1] == "Total value: 35.55 EUR"


def test_low_stock_names_the_items_below_the_threshold_sorted_by_name():
    # Below means strictly below: the screws (exactly 5) are not low.
    assert report.low_stock(sample(), 5) == ["Hinge", "Nut", "Washer"]
