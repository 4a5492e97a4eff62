def plural(count, word):
    """'1 day', '2 days'."""
    return f"{count} {word}" + ("" if count == 1 else "s")
