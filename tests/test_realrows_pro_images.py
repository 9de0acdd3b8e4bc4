"""bench/realrows/pro_images.py: SWE-bench Pro's Dockerfiles built here with each change listed
(docs/real-benchmarks.md, "SWE-bench Pro, Go"): a heredoc made a file of the context with
the same bytes, the listed deviations applied inside it too, and a Dockerfile that would still
clone from GitHub refused rather than built half-changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import script_module

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "realrows" / "pro_images.py"


@pytest.fixture(scope="module")
def pro_images():
    return script_module(SCRIPT, "realrows_pro_images")


INSTANCE = """FROM base_navidrome__navidrome
ENV UV_HTTP_TIMEOUT=60

RUN cat <<'EOFBUILD' > /build.sh
#!/bin/sh
cd /app
set -e
make setup
make build
EOFBUILD
RUN chmod +x /build.sh
RUN /build.sh"""


def test_heredocs_become_context_files_with_the_deviations_inside(pro_images, tmp_path):
    text, applied = pro_images.derived(INSTANCE, "instance", tmp_path)
    assert text == ("FROM base_navidrome__navidrome\nENV UV_HTTP_TIMEOUT=60\n\nCOPY build.sh /build.sh\n"
                    "RUN chmod +x /build.sh\nRUN /build.sh")
    assert (tmp_path / "build.sh").read_text() == "#!/bin/sh\ncd /app\nset -e\nmake download-deps setup-git\nmake build\n"
    assert [line.split(": ", 1)[1][:12] for line in applied] == ["`make setup`", "1 heredoc(s)"]


def test_the_base_image_and_githubs_downloads_are_replaced_and_listed(pro_images, tmp_path):
    base = "\n".join(published for published, _, _ in pro_images.DEVIATIONS[:4])
    text, applied = pro_images.derived(base, "base", tmp_path)
    assert "FROM testprism-golang:1.24\n" in text and "github.com" not in text and "nodesource" not in text
    assert "COPY repo.git /app/.git" in text and "libtag1-dev" in text
    assert len(applied) == 4


def test_a_dockerfile_still_cloning_from_github_is_refused(pro_images, tmp_path):
    with pytest.raises(SystemExit, match="base: still clones from GitHub"):
        pro_images.derived("FROM golang:1.24\nRUN git clone https://github.com/acme/other.git .\n", "base", tmp_path)
