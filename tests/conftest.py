"""Shared test setup: makes `tests/builders.py` importable and keeps proxies out of the way."""

from __future__ import annotations

import os

for _name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
    os.environ.pop(_name, None)
