"""Settings for the downloader."""

MAX_RETRIES = 3
TIMEOUT_SECONDS = 10
