"""Plain-text views of an inventory."""

from inventory import Inventory, Item


def format_line(item: Item) -> str:
    return f"{item.sku:<8} {item.name:<10} {item.quantity:>5} x {item.price:>6.2f} EUR"


def stock_report(inventory: Inventory) -> str:
    """One line per item, by SKU, then the total value."""
    items = sorted(inventory.items.values(), key=lambda item: item.sku)
    lines = [format_line(item) for item in items]
    lines.append(f"Total value: {inventory.total_value():.2f} EUR")
    return "\n".join(lines)
