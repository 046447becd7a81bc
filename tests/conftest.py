"""Shared test setup: makes `tests/builders.py` importable, keeps proxies out of the way, and
keeps the `local` backend from using a model server that happens to run on this machine (a
test that wants one names its port in `C2A_MODEL_PORTS`)."""

from __future__ import annotations

import os

for _name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
    os.environ.pop(_name, None)
os.environ["C2A_MODEL_PORTS"] = ""
os.environ.pop("C2A_MODEL_INSTALL", None)
