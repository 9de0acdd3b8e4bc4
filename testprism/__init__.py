"""testprism: how reliable are generated test suites?

Replays every suite on the buggy program, the reference fix and panels of valid and invalid
candidate patches, and scores configurations jointly (GRR, CAR, WDR, F1, JVR).

The public face is small: the CLI (`testprism`), the benchmark loader, the store and the
scoring functions. Everything else lives in `testprism.flows`, `testprism.tasks` and
`testprism.storage` and may change.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("testprism")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
