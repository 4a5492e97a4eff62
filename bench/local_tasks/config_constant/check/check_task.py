import subprocess
import sys

import config

assert config.MAX_RETRIES == 5, f"MAX_RETRIES is {config.MAX_RETRIES}"
assert config.TIMEOUT_SECONDS == 10
tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "test_config.py"], check=False, capture_output=True, text=True, timeout=60)
assert tests.returncode == 0 and "2 passed" in tests.stdout, "test_config.py: " + tests.stdout[-2000:]
print("ok")
