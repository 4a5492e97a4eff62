from datetime import date


def parse_date(text):
    """A date from text written as YYYY-MM-DD."""
    year, month, day = (int(part) for part in text.split("-"))
    return date(year, month, day)
