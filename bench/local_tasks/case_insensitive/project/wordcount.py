from collections import Counter


def count_words(text):
    """How many times each word occurs in text."""
    return Counter(text.split())


def most_common(text, n=3):
    return [word for word, _ in count_words(text).most_common(n)]
