"""The bundled benchmark's folder, apart from benchmark.py (the loader, pydantic models, the
diff reader): the CLI shows it as `demo`'s default, and importing the loader for a path
would cost its `--help` a quarter of its time."""

from pathlib import Path

#: The bundled benchmark (examples/): its own code is trusted, so it runs even without bubblewrap.
BUNDLED = Path(__file__).resolve().parents[2] / "examples"

#: `testprism demo`'s default part of it (examples/demo.toml says why these)
QUICK_DEMO = BUNDLED / "demo.toml"


def quick_demo() -> tuple[str, ...]:
    """The instance ids of the quick demo (examples/demo.toml)."""
    import tomllib

    return tuple(tomllib.loads(QUICK_DEMO.read_text(encoding="utf-8"))["quick"])


def bundled_part(target: Path, instances: tuple[str, ...]) -> Path:
    """A copy at `target` of the bundled benchmark with only `instances` (and their suites):
    the harness's own copy of trusted content, so it is as trusted as the bundled one."""
    import shutil

    def keep(folder: str, names: list[str]) -> list[str]:
        here = Path(folder)
        per_instance = here == BUNDLED / "instances" or here.parent == BUNDLED / "suites"
        return [n for n in names if per_instance and n not in instances]

    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(BUNDLED, target, ignore=keep)
    return target
