"""Build SWE-bench Pro's images of Go rows here, from Pro's own two Dockerfiles per instance
(scaleapi/SWE-bench_Pro-os `dockerfiles/{base_dockerfile,instance_dockerfile}/<id>/Dockerfile`),
where neither Docker Hub nor GitHub can be reached (docs/real-benchmarks.md, "SWE-bench Pro").

Each Dockerfile is used as published except for the lines in DEVIATIONS, each replaced by
exact text (the build stops if a line is not found, so a Dockerfile that differs is never
built half-changed) and listed with why. The base image is tagged with the name the instance
Dockerfile starts FROM (`base_<owner>__<repo>`), the instance image `pro-local/<tag>` (Pro's
tag, helper_code/image_uri.py), and an image map (`--images` of the import) names it for the
instance. Only for development: what it builds is not committed.

    python bench/realrows/pro_images.py --pro-git-dir /work/.mirror/scaleapi+SWE-bench_Pro-os/repo \\
        --repo-git-dir /work/.mirror/navidrome+navidrome/repo --out /work/realrows/pro ID...
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

from testprism.tasks.importing.image_names import pro_tag

#: (published text, replacement, why): the only changes made to Pro's Dockerfiles
DEVIATIONS: tuple[tuple[str, str, str], ...] = (
    ("FROM golang:1.24\n", "FROM testprism-golang:1.24\n",
     "golang:1.24 cannot be pulled: a local stand-in (bench/realrows/pro/golang.Dockerfile: Debian bookworm, "
     "Go 1.24.13 from the Go proxy's golang.org/toolchain module)"),
    ("RUN curl -L https://github.com/taglib/taglib/archive/refs/heads/master.tar.gz -o /tmp/taglib.tar.gz \\\n"
     "    && tar -xzvf /tmp/taglib.tar.gz -C /tmp \\\n"
     "    && cd /tmp/taglib-master \\\n"
     "    && cmake . \\\n"
     "    && make -j$(nproc) \\\n"
     "    && make install \\\n"
     "    && ldconfig\n",
     "RUN apt-get update && apt-get install -y libtag1-dev && rm -rf /var/lib/apt/lists/*\n",
     "TagLib's master tarball is on GitHub: Debian bookworm's libtag1-dev (TagLib 1.13) instead of TagLib 2"),
    ("RUN curl -fsSL https://deb.nodesource.com/setup_20.x | bash - \\\n"
     "    && apt-get install -y nodejs \\\n"
     "    && rm -rf /var/lib/apt/lists/*\n",
     "",
     "Node.js 20 from NodeSource left out: it serves only `make setup`'s `npm ci` of the web UI, which the Go "
     "tests do not read"),
    ("RUN git clone https://github.com/navidrome/navidrome.git .\n",
     "COPY repo.git /app/.git\n",
     "GitHub cannot be reached: /app/.git is a shallow repository of the snapshot here holding the rows' base "
     "commits (depth 1; the snapshot misses objects, so no full clone or bundle could be made), HEAD the newest "
     "base; the freeze-date reset and the instance's `git reset --hard <base>` run unchanged"),
    ("make setup\n", "make download-deps setup-git\n",
     "`make setup` = check_env (Go and Node versions) + download-deps + setup-git + `npm ci` in ui/: without "
     "Node, its Go parts only"),
)


#: `RUN cat <<'END' > PATH` … `END`: a heredoc, which only BuildKit reads (not installed here)
HEREDOC = re.compile(r"^RUN cat <<'(\w+)' > (/\S+)\n(.*?)^\1$", re.MULTILINE | re.DOTALL)


def without_heredocs(text: str, context: Path) -> tuple[str, int]:
    """Each heredoc that writes a file made a file of the build context, and the RUN a COPY of it:
    the same bytes at the same path, for Docker's legacy builder (this machine has no buildx)."""
    def copy(match: re.Match[str]) -> str:
        name = Path(match[2]).name
        (context / name).write_text(match[3], encoding="utf-8")
        return f"COPY {name} {match[2]}"
    return HEREDOC.subn(copy, text)


#: `--warm-go-cache`: a third image over Pro's instance image, whose Go build cache is filled
#: and kept in the program tree, so that each check run compiles what its patch changed instead
#: of every dependency (cgo's sqlite3 alone takes minutes on this machine's shared cores). Go's
#: cache is content-addressed, so results are those of a cold build; a run's GOCACHE is the
#: image's variable (a run honours the image's variables) and /app is the state's writable tree.
WARM = """FROM {image}
ENV GOCACHE=/app/.cache/go-build
RUN cd /app && (go test -count=1 -run '^$' ./... > /tmp/warm.log 2>&1 || true) && chmod -R a+rwX /app/.cache
"""
WARM_WHY = ("added: GOCACHE=/app/.cache/go-build filled at build time by `go test -run '^$' ./...` (the packages "
            "and their tests compiled, nothing run), so that a check run recompiles only what its patch changed")


def derived(text: str, which: str, context: Path) -> tuple[str, list[str]]:
    """Pro's Dockerfile with the DEVIATIONS that occur in it, and the reasons of those applied."""
    applied = []
    for published, replacement, why in DEVIATIONS:
        if published in text:
            text = text.replace(published, replacement)
            applied.append(f"{which}: {why}")
    text, heredocs = without_heredocs(text, context)
    if heredocs:
        applied.append(f"{which}: {heredocs} heredoc(s) `RUN cat <<'X' > FILE` made files of the build context, "
                       "COPY'd to the same path (Docker's legacy builder reads no heredoc; no buildx here)")
    if "github.com" in text and "git clone" in text:
        sys.exit(f"{which}: still clones from GitHub after the deviations: add one for it")
    return text, applied


def show(git_dir: Path, path: str) -> str:
    done = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"HEAD:{path}"], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{git_dir}: {path}: {done.stderr.strip()}")
    return done.stdout


def base_commit(git_dir: Path, instance: str) -> str:
    """The `Base Commit:` of the instance's run_scripts/<id>/instance_info.txt."""
    for line in show(git_dir, f"run_scripts/{instance}/instance_info.txt").splitlines():
        if line.startswith("Base Commit:"):
            return line.split(":", 1)[1].strip()
    sys.exit(f"run_scripts/{instance}/instance_info.txt: field Base Commit: missing")


def shallow_repository(git_dir: Path, commits: list[str], target: Path) -> Path:
    """A git directory holding `commits` at depth 1 (a branch each, HEAD the newest), fetched
    from the local snapshot `git_dir`; one already there that holds them all is kept as it is
    (a base image built on it stays valid for the instances built before)."""
    if target.is_dir() and all(subprocess.run(["git", f"--git-dir={target}", "cat-file", "-e", f"{c}^{{commit}}"],
                                              capture_output=True).returncode == 0 for c in commits):
        return target
    subprocess.run(["rm", "-rf", str(target)], check=True)
    subprocess.run(["git", "init", "-q", "--bare", str(target)], check=True)
    subprocess.run(["git", f"--git-dir={target}", "-c", "uploadpack.allowAnySHA1InWant=true", "fetch", "-q",
                    "--depth", "1", f"file://{git_dir.resolve()}", *commits], check=True)
    dated = sorted(commits, key=lambda c: subprocess.run(
        ["git", f"--git-dir={target}", "log", "-1", "--format=%ct", c], capture_output=True, text=True,
        check=True).stdout.strip())
    for commit in commits:
        subprocess.run(["git", f"--git-dir={target}", "branch", "-f", f"base-{commit[:12]}", commit], check=True)
    subprocess.run(["git", f"--git-dir={target}", "symbolic-ref", "HEAD", f"refs/heads/base-{dated[-1][:12]}"],
                   check=True)
    subprocess.run(["git", f"--git-dir={target}", "config", "core.bare", "false"], check=True)
    return target


def build(context: Path, tag: str) -> float:
    """`docker build` of context/Dockerfile (networked, as Pro's builds are), its seconds."""
    start = time.monotonic()
    done = subprocess.run(["nice", "-n", "10", "docker", "build", "--network", "host", "-t", tag, str(context)],
                          capture_output=True, text=True)
    (context / "build.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    if done.returncode:
        sys.exit(f"{context}/Dockerfile does not build ({context}/build.log):\n{(done.stdout + done.stderr)[-2000:]}")
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pro-git-dir", type=Path, required=True)
    parser.add_argument("--repo-git-dir", type=Path, required=True, help="a snapshot of the rows' repository")
    parser.add_argument("--out", type=Path, default=Path("/work/realrows/pro"))
    parser.add_argument("--warm-go-cache", action="store_true", help="add the WARM image and map the instance to it")
    parser.add_argument("instances", nargs="+")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    shallow = shallow_repository(args.repo_git_dir, [base_commit(args.pro_git_dir, i) for i in args.instances],
                                 args.out / "repo.git")
    names = []
    for instance in args.instances:
        owner_repo = instance.removeprefix("instance_").split("-")[0]
        owner, repo = owner_repo.split("__")
        folder = args.out / instance
        for which, published in (("base", f"dockerfiles/base_dockerfile/{instance}/Dockerfile"),
                                 ("instance", f"dockerfiles/instance_dockerfile/{instance}/Dockerfile")):
            context = folder / which
            context.mkdir(parents=True, exist_ok=True)
            text, applied = derived(show(args.pro_git_dir, published), published, context)
            (context / "Dockerfile").write_text(text, encoding="utf-8")
            (context / "deviations.txt").write_text("".join(f"{line}\n" for line in applied), encoding="utf-8")
            if which == "base":
                subprocess.run(["rm", "-rf", str(context / "repo.git")], check=True)
                subprocess.run(["cp", "-a", str(shallow), str(context / "repo.git")], check=True)
                tag = f"base_{owner}__{repo}"
            else:
                tag = f"pro-local/sweap-images:{pro_tag(instance, f'{owner}/{repo}')}"
            seconds = build(context, tag)
            print(f"{instance} {which}: {tag} built in {seconds:.1f} s; {len(applied)} deviations")
        if args.warm_go_cache:
            context = folder / "warm"
            context.mkdir(parents=True, exist_ok=True)
            (context / "Dockerfile").write_text(WARM.format(image=tag), encoding="utf-8")
            (context / "deviations.txt").write_text(WARM_WHY + "\n", encoding="utf-8")
            tag = tag.replace("pro-local/sweap-images:", "pro-local/sweap-images-warm:")
            seconds = build(context, tag)
            print(f"{instance} warm: {tag} built in {seconds:.1f} s")
        names.append(f'"{instance}" = "{tag}"\n')
    images = args.out / "images.toml"
    kept = [line for line in (images.read_text(encoding="utf-8").splitlines(keepends=True) if images.exists() else [])
            if line.split(" = ", 1)[0].strip('"') not in args.instances]
    images.write_text("".join(kept + names), encoding="utf-8")
    print(f"{images}: {len(kept) + len(names)} images ({len(names)} built now)")


if __name__ == "__main__":
    main()
