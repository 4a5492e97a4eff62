def average(scores):
    """The mean of a list of scores."""
    return sum(scores) / len(scores)


def report(scores):
    return f"{len(scores)} scores, average {average(scores):.1f}"
