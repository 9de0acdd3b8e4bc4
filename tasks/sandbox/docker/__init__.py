"""The `docker` backend, one job a module: engine.py the engine and the ownership labels,
base_image.py and environment_image.py the images runs use, images.py listing and pruning
them, archive.py a run's workspace in its container, pump.py its output, containers.py
what every run container gets, fresh.py a fresh container per run, reused.py fast mode,
backend.py `DockerBackend` itself. This file imports none of them: the backend is
registered when backend.py is loaded (its entry point in pyproject.toml)."""
