import config
from retry import delays


def test_max_retries():
    assert config.MAX_RETRIES == 5


def test_delays():
    assert delays() == [1.0, 2.0, 4.0, 8.0, 16.0]
