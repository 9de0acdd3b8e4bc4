"""The image each benchmark publishes for an instance, named as its own harness names it, and
the user's mapping file that overrides any of those names.

The names are the benchmarks' own rules, read in their published code (never guessed):

- SWE-bench, SWE-bench Verified/Lite, SWT-bench and SWE-bench Multilingual:
  `swebench/sweb.eval.x86_64.<instance_id>:latest`, lower case, with every `__` written
  `_1776_` because Docker Hub allows no double underscore in a repository name
  (SWE-bench/SWE-bench swebench/image_builder/image_spec.py `ImageSpec.name`, and
  swebench/task/checks.py `expected_image`); the program is at `/testbed`
  (swebench/harness/constants `DOCKER_WORKDIR`).
- SWE-bench Pro: `jefzda/sweap-images:<dockerhub_tag>`, the tag a column of every row
  (scaleapi/SWE-bench_Pro-os README "Docker Images"); a row without it gets the tag
  helper_code/image_uri.py `get_dockerhub_image_uri` derives from the instance id and the
  repository. The program is at `/app` (swe_bench_pro_eval.py `create_entryscript`).
- Multi-SWE-bench: `mswebench/<org>_m_<repo>:pr-<number>`, lower case
  (multi-swe-bench/multi-swe-bench multi_swe_bench/harness/image.py `Image.image_name`,
  the instance images' `image_tag`); the program is at `/home/<repo>`.
- R2E-Gym / DeepSWE-style rows name their image themselves (`docker_image`), the program
  at `/testbed`.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from testprism.tasks.model.benchmark_format import EnvironmentSpec

SWEBENCH_NAMESPACE = "swebench"
SWEBENCH_PROGRAM = "/testbed"
PRO_REPOSITORY = "jefzda/sweap-images"
PRO_PROGRAM = "/app"
#: Docker's bound on a tag, which Pro's helper cuts its tags to
TAG_MAX = 128
MULTI_SWE_BENCH_NAMESPACE = "mswebench"


def swebench_image(instance_id: str, namespace: str = SWEBENCH_NAMESPACE) -> str:
    """SWE-bench's image of an instance (module docstring), as its ImageSpec.name makes it."""
    return f"{namespace}/sweb.eval.x86_64.{instance_id}:latest".replace("__", "_1776_").lower()


def pro_tag(instance_id: str, repo: str) -> str:
    """The tag Pro's helper_code/image_uri.py derives for a row without `dockerhub_tag`:
    `<owner>.<name>-<id without instance_ and -vnan>`, element-web's exceptions kept."""
    owner, name = repo.lower().split("/")
    suffix = instance_id.removeprefix("instance_")
    if instance_id == "instance_element-hq__element-web-ec0f940ef0e8e3b61078f145f34dc40d1938e6c5-vnan":
        name = "element-web"
    elif "element-hq" in repo.lower() and "element-web" in repo.lower():
        name = "element"
        suffix = suffix.removesuffix("-vnan")
    else:
        suffix = suffix.removesuffix("-vnan")
    return f"{owner}.{name}-{suffix}"[:TAG_MAX]


def pro_image(tag: str) -> str:
    """SWE-bench Pro's image of the instance whose `dockerhub_tag` is `tag`."""
    return f"{PRO_REPOSITORY}:{tag}"


def multi_swe_bench_image(org: str, repo: str, number: int) -> str:
    """Multi-SWE-bench's image of pull request `number` of `org/repo`."""
    return f"{MULTI_SWE_BENCH_NAMESPACE}/{org}_m_{repo}".lower() + f":pr-{number}"


class ImageMapError(ValueError):
    """The mapping file is unusable as a whole; names the file and the field."""


@dataclass(frozen=True)
class ImageMap:
    """The user's names (`--images FILE`): a TOML table `"<instance_id>" = "<image>"` whose
    names win over the benchmark's. Each is checked as an image reference when read, so a
    typo is named with its file and key before any row is imported."""

    names: dict[str, str] = field(default_factory=dict)
    path: Path | None = None

    @classmethod
    def read(cls, path: Path | None) -> ImageMap:
        if path is None:
            return cls()
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ImageMapError(f"{path}: field (syntax): not a TOML table of instance id = image: {exc}") from exc
        names: dict[str, str] = {}
        for key, value in data.items():
            if not isinstance(value, str):
                raise ImageMapError(f"{path}: field {key}: must be an image name (a string), not {type(value).__name__}")
            try:
                EnvironmentSpec(image=value, program_in_image=SWEBENCH_PROGRAM)
            except ValidationError as exc:
                raise ImageMapError(f"{path}: field {key}: {exc.errors()[0]['msg']}") from exc
            names[key] = value
        return cls(names, path)

    def name(self, instance_id: str, published: str) -> tuple[str, str]:
        """The image of an instance: the file's name for it, else the benchmark's
        (`published`); and, when the file's wins, a note saying so ('' otherwise)."""
        if instance_id in self.names:
            return self.names[instance_id], f"{self.path} (over {published})"
        return published, ""
