"""Items in stock, kept by SKU."""

from dataclasses import dataclass


@dataclass
class Item:
    sku: str
    name: str
    price: float  # per unit, in euros
    quantity: int = 0


class Inventory:
    def __init__(self) -> None:
        self.items: dict[str, Item] = {}

    def add(self, item: Item) -> None:
        """Adds an item; an SKU already in stock gets its quantity increased."""
        if item.sku in self.items:
            self.items[item.sku].quantity += item.quantity
        else:
            self.items[item.sku] = item

    def remove(self, sku: str, quantity: int) -> None:
        item = self.items[sku]
        if quantity > item.quantity:
            raise ValueError(f"only {item.quantity} of {sku} in stock")
        item.quantity -= quantity

    def total_value(self) -> float:
        return sum(item.price * item.quantity for item in self.items.values())
