"""Settings for the downloader."""

MAX_RETRIES = 5
TIMEOUT_SECONDS = 10
