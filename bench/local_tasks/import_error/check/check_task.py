import subprocess
import sys


def run(*args):
    done = subprocess.run([sys.executable, "main.py", *args], check=False, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


assert run("2024-01-01", "2024-03-01") == "60 days\n"
assert run("2024-01-01", "2024-01-02") == "1 day\n"
print("ok")
