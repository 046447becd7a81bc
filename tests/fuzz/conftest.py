"""The fuzz suite's one hypothesis profile: deterministic, bounded, the same in CI and locally.

Every fuzz test feeds untrusted input (platform payloads, harness lines, manifests, model text)
to one boundary and asserts two things: only the project's own errors escape, and each call
finishes within a bound (`bounds.py`: `bounded`, `timed`). The examples are derived from the
test's name (`derandomize`), so a failure in CI is the same failure on a laptop. Set
`C2A_FUZZ_EXAMPLES` to search harder locally.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "c2a",
    max_examples=int(os.environ.get("C2A_FUZZ_EXAMPLES", "150")),
    deadline=None,  # wall-clock deadlines flake on a busy 2-core machine; `bounded` is the bound
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("c2a")
