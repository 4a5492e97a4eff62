def average(scores):
    """The mean of a list of scores (0.0 for no scores)."""
    if not scores:
        return 0.0
    return sum(scores) / len(scores)


def report(scores):
    return f"{len(scores)} scores, average {average(scores):.1f}"
