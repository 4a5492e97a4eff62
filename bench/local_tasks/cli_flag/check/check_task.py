import subprocess
import sys


def run(*args):
    done = subprocess.run([sys.executable, "greet.py", *args], check=False, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


assert run("Ana", "--shout") == "HELLO, ANA!\n", run("Ana", "--shout")
assert run("--shout", "Bo") == "HELLO, BO!\n"
assert run("Ana") == "Hello, Ana!\n", run("Ana")
print("ok")
