"""A "browser" for OAuth logins in tests: GETs the authorization URL it is given and follows the
redirects (the authorization servers of the tests approve at once), so the code reaches the
client's loopback listener. Only loopback URLs: a test never leaves the machine.

    python tests/support/loopback_browser.py URL

``browser_command(folder)`` writes an executable that runs it, for ``BROWSER`` (Python's
``webbrowser`` runs that variable as one command with the URL appended).
"""

from __future__ import annotations

import sys
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit


class _LoopbackOnly(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        assert urlsplit(newurl).hostname in ("127.0.0.1", "localhost"), newurl
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def visit(url: str) -> int:
    assert urlsplit(url).hostname in ("127.0.0.1", "localhost"), url
    with urllib.request.build_opener(_LoopbackOnly).open(url, timeout=30) as page:
        return page.status


def browser_command(folder: Path) -> str:
    script = folder / "browser"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).resolve()}" "$1" >>"{folder}/browser.log" 2>&1\n')
    script.chmod(0o755)
    return str(script)


if __name__ == "__main__":
    print(visit(sys.argv[1]))
