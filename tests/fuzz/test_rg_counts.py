"""rg's ``--count --with-filename --null --stats`` output, as grep's ripgrep engine reads it
(tools/grep.py ``_counted``): any path rg can print (any bytes but NUL, a newline included) comes
back with its count, in order, whatever the stats after the last record say."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.support import CHEAP, examples, no_hang
from totem_engine.tools.grep import _counted

PATHS = st.binary(min_size=1, max_size=40).filter(lambda raw: b"\0" not in raw)
RECORDS = st.lists(st.tuples(PATHS, st.integers(min_value=1, max_value=10**9)), max_size=20)
# --stats' summary: plain text lines (no NUL), as rg ends its output.
STATS = st.binary(max_size=200).filter(lambda raw: b"\0" not in raw)


@settings(max_examples=examples(CHEAP))
@given(RECORDS, STATS)
def test_every_record_comes_back_with_its_count(records, stats):
    output = b"".join(path + b"\0" + str(count).encode() + b"\n" for path, count in records) + stats
    with no_hang():
        counted = _counted(output)
    assert counted == [(path.decode("utf-8", "surrogateescape"), count) for path, count in records]
