import re


def slugify(text: str, separator: str = "-") -> str:
    """Lower-case text with every run of other characters than letters and digits replaced by
    separator, and no separator at either end."""
    text = text.strip().lower()
    text = re.sub(r"[^a-z0-9]+", separator, text)
    return text.strip(separator)


def word_count(text: str) -> int:
    """Number of whitespace-separated words in text."""
    return len(text.split())
