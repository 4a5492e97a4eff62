import sys

from utils import parse_date, plural


def days_between(start, end):
    return (parse_date(end) - parse_date(start)).days


if __name__ == "__main__":
    print(plural(days_between(sys.argv[1], sys.argv[2]), "day"))
