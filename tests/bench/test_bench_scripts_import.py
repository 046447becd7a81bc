"""Every benchmark script imports: the benchmarks run outside `make test` and outside mypy's
paths, so a name moved in the code they measure would otherwise break one unseen."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))


@pytest.mark.parametrize("script", sorted(p.stem for p in BENCH.glob("*.py")))
def test_the_benchmark_script_imports(script: str) -> None:
    importlib.import_module(script)
