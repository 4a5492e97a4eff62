from config import MAX_RETRIES


def delays(base=1.0):
    """Seconds to wait before each retry: twice as long every time."""
    return [base * 2**i for i in range(MAX_RETRIES)]
