import re


def slugify(text, separator="-"):
    text = text.strip().lower()
    text = re.sub(r"[^a-z0-9]+", separator, text)
    return text.strip(separator)


def word_count(text: str) -> int:
    """Number of whitespace-separated words in text."""
    return len(text.split())
