"""The bundled benchmark's folder, apart from benchmark.py (the loader, pydantic models, the
diff reader): the CLI shows it as `demo`'s default, and importing the loader for a path
would cost its `--help` a quarter of its time."""

from pathlib import Path

#: The bundled benchmark (examples/): its own code is trusted, so it runs even without bubblewrap.
BUNDLED = Path(__file__).resolve().parents[2] / "examples"
