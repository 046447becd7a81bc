"""Finding a model server already running on this machine, for the `local` backend when
`C2A_MODEL_URL` is not set: Ollama (port 11434), llama.cpp's server (8080) and LM Studio (1234)
all serve the OpenAI-compatible `GET /v1/models`.

Only loopback is asked (`127.0.0.1`), each port once, with a short timeout, and the answer is
untrusted: a body larger than `MAX_BODY`, one that is not `{"data": [{"id": ...}, ...]}`, or an
id that is not a short printable name, is taken as "no model server here". `C2A_MODEL_PORTS`
(`11434,8080` or `""` for none) replaces the ports looked at.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from core.errors import ManifestError

__all__ = ["KNOWN_SERVERS", "PORTS_ENV", "Found", "find_server", "models_in", "ports_from"]

KNOWN_SERVERS: Final = {11434: "Ollama", 8080: "llama.cpp server", 1234: "LM Studio"}
PORTS_ENV: Final = "C2A_MODEL_PORTS"
TIMEOUT_S: Final = 0.5
MAX_BODY: Final = 1 << 20
MAX_NAME: Final = 200


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is not followed: the probe never leaves the port it asked."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


# Straight to loopback: a proxy from the environment must never see (or answer) the probe.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


@dataclass(frozen=True, slots=True)
class Found:
    """A model server that answered: its API root, the model to ask for, and what it is."""

    base_url: str
    model: str
    server: str


def ports_from(environ: Mapping[str, str]) -> tuple[int, ...]:
    """The ports to look at: `C2A_MODEL_PORTS` when set (comma-separated; empty for none),
    else the known servers'. ManifestError for a value that is not a list of ports."""
    raw = environ.get(PORTS_ENV)
    if raw is None:
        return tuple(KNOWN_SERVERS)
    ports: list[int] = []
    for part in (p.strip() for p in raw.split(",")):
        if not part:
            continue
        if not (part.isascii() and part.isdigit()) or not 0 < int(part) < 65536:
            raise ManifestError(
                f"{PORTS_ENV}={raw!r}: {part!r} is not a port; give ports such as 11434,8080 "
                "(or an empty value to look for no model server)"
            )
        ports.append(int(part))
    return tuple(ports)


def find_server(
    ports: Sequence[int], model: str | None = None, timeout: float = TIMEOUT_S
) -> Found | None:
    """The first port, in order, whose `/v1/models` lists a model, with `model` (when given)
    or the first model it lists; None when none does."""
    for port in ports:
        base_url = f"http://127.0.0.1:{port}/v1"
        listed = _models(base_url, timeout)
        if listed:
            name = KNOWN_SERVERS.get(port, "an OpenAI-compatible server")
            return Found(base_url, model or listed[0], name)
    return None


def _models(base_url: str, timeout: float) -> list[str]:
    """The model ids the server lists; [] when nothing or something else answers."""
    deadline = time.monotonic() + timeout
    body = b""
    try:
        with _OPENER.open(f"{base_url}/models", timeout=timeout) as response:
            # A server that trickles its answer is cut off at the deadline, not waited for.
            while len(body) <= MAX_BODY and time.monotonic() < deadline:
                piece = response.read1(65536)
                if not piece:
                    break
                body += piece
            else:
                return []
    except (OSError, ValueError, http.client.HTTPException):
        return []
    return models_in(body)


def models_in(body: bytes) -> list[str]:
    """The model ids in a `/v1/models` answer, `{"data": [{"id": ...}, ...]}`; [] for a body
    too large or of any other shape. Ids that are not short printable names are left out."""
    if len(body) > MAX_BODY:
        return []
    try:
        data: Any = json.loads(body)
    except (ValueError, RecursionError):
        return []
    listed = data.get("data") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return []
    return [
        entry["id"] for entry in listed if isinstance(entry, dict) and _is_name(entry.get("id"))
    ]


def _is_name(value: object) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_NAME
        and value.isprintable()
        and not value.isspace()
    )
