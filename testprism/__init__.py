"""testprism: how reliable are generated test suites?

Replays every suite on the buggy program, the reference fix and panels of valid and invalid
candidate patches, and scores configurations jointly (GRR, CAR, WDR, F1, JVR).

The public face is this module: the names below are what a user scripts with, and they
keep working across releases; everything else lives in `testprism.flows`, `testprism.tasks`
and `testprism.storage` and may move. Names load on first use, so `import testprism` does
not import Prefect.

    import testprism
    bench = testprism.load_benchmark("examples")
    testprism.replay("examples", store="out")          # the replay flow
    board = testprism.score(store="out")               # leaderboard (polars DataFrame)
    runs = testprism.Store("out").scan("runs")          # the store, read with polars
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

#: public name -> (module, attribute)
_PUBLIC = {
    "load_benchmark": ("testprism.tasks.model.benchmark", "load_benchmark"),
    "Benchmark": ("testprism.tasks.model.benchmark", "Benchmark"),
    "BenchmarkError": ("testprism.tasks.model.input_error", "BenchmarkError"),
    "Store": ("testprism.storage", "Store"),
    "replay": ("testprism.flows.replay", "replay_flow"),
    "collect": ("testprism.flows.collect", "collect_flow"),
    "score": ("testprism.flows.score", "score_flow"),
    "report": ("testprism.flows.report", "report_flow"),
    "Limits": ("testprism.tasks.sandbox.limits", "Limits"),
    "Policy": ("testprism.tasks.execution.verdict", "Policy"),
    "SandboxBackend": ("testprism.tasks.sandbox.base", "SandboxBackend"),
    "backend_names": ("testprism.tasks.sandbox.base", "backend_names"),
}

__all__ = ["__version__", *_PUBLIC]


def _version() -> str:
    """The installed distribution's version, read on first use: importlib.metadata costs
    every command's start (`testprism --help`) a tenth of what it may take in all."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("testprism")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    try:
        module, attribute = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'testprism' has no attribute {name!r}") from None
    value = getattr(import_module(module), attribute)
    globals()[name] = value
    return value
