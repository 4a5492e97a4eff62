import sys

from dates import parse_date
from utils import plural


def days_between(start, end):
    return (parse_date(end) - parse_date(start)).days


if __name__ == "__main__":
    print(plural(days_between(sys.argv[1], sys.argv[2]), "day"))
