def chunked(items, size):
    """Split items into consecutive lists of at most `size` items."""
    chunks = []
    for start in range(0, len(items), size):
        chunks.append(items[start:start + size])
    return chunks
