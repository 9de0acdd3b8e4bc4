"""C and C++: the bundled instances `bytekit__ring-full-reads-empty` (C, CMake + CTest) and
`cachekit__lru-get-no-refresh` (C++, CMake + GoogleTest) replayed under `local` and
`docker`, with their build step (the library and the official tests built once per state,
kept with the tree in build/), their strong suite on every state and their official checks
labelling every candidate; and the ids of CTest's and GoogleTest's own JUnit XML, read from
the real runners' output.

One replay per backend, shared by the module (CI's time): the C++ builds dominate it."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from testprism.flows.replay import replay_flow
from testprism.storage import Store
from testprism.tasks.collect.candidate import normalise_patch
from testprism.tasks.collect.label import LABEL_POLICY, label_of
from testprism.tasks.collect.verification import candidate_states, execute, plan, stored_rows
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.execution.junit import parse_junit, select
from testprism.tasks.model.bundled import BUNDLED
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.execution.run_settings import RunSettings

C_INSTANCE, CPP_INSTANCE = "bytekit__ring-full-reads-empty", "cachekit__lru-get-no-refresh"
INSTANCES = (C_INSTANCE, CPP_INSTANCE)
BACKENDS = ("local", "docker")


def _part(target: Path) -> Path:
    """The bundled benchmark with only the C and C++ instances and their strong suites."""
    def keep(folder: str, names: list[str]) -> list[str]:
        here = Path(folder)
        if here == BUNDLED / "suites":
            return [n for n in names if n != "strong"]
        if here == BUNDLED / "instances" or here.parent == BUNDLED / "suites":
            return [n for n in names if n not in INSTANCES]
        if here == BUNDLED / "environments":
            return [n for n in names if n != "c-cpp"]
        return []
    shutil.copytree(BUNDLED, target, ignore=keep)
    return target


def _expected() -> dict[tuple[str, str], str]:
    """The strong suite's designed outcome on every state: it reproduces the bug, passes the
    reference and every valid candidate, fails every invalid one."""
    bench = load_benchmark(BUNDLED)
    out = {}
    for iid in INSTANCES:
        out |= {(iid, "buggy"): "F", (iid, "reference"): "P"}
        out |= {(iid, c.id): "P" if c.label == "valid" else "F" for c in bench.instances[iid].candidates}
    return out


def _labels(bench: Path, backend: str, store: Path, work: Path) -> dict[tuple[str, str], tuple[str | None, frozenset]]:
    """Every candidate labelled by its instance's official checks on `backend`."""
    options = ExecutionOptions(backend=backend, work_root=work, store_root=store, concurrency=2, policy=LABEL_POLICY)
    labels = {}
    for iid, instance in load_benchmark(bench).instances.items():
        patches = {c.id: normalise_patch(c.patch.decode()) for c in instance.candidates}
        specs = plan(instance, list(candidate_states(instance, patches).values()), options)
        execute(specs, options)
        rows = stored_rows(Store(store), [s.key for s in specs])
        for spec in specs:
            label = label_of(instance, rows[spec.key])
            labels[iid, spec.state.candidate_id] = (label.label, frozenset(label.failed_checks))
    return labels


@pytest.fixture(scope="module")
def replays(tmp_path_factory, work_root) -> dict[str, dict]:
    """Per backend: the strong suite's outcome per (instance, state), the runs' isolation,
    the number of state builds, and the checks' label of every candidate."""
    tmp = tmp_path_factory.mktemp("lang-c")
    bench = _part(tmp / "bench")
    results = {}
    for backend in BACKENDS:
        # local needs a work area the sandbox's uid can traverse (the session's), docker its own
        work = work_root / f"own-{tmp.name}" if backend == "local" else tmp / "docker-work"
        store = tmp / backend
        summary = replay_flow(benchmark=str(bench), store=str(store), run=RunSettings(backend=backend, work=str(work)))
        runs = Store(store).scan("runs").collect()
        results[backend] = {
            "outcomes": {(r["instance_id"], r["candidate_id"] or r["state"]): r["outcome"]
                         for r in runs.iter_rows(named=True)},
            "isolation": set(runs["isolation"]),
            "builds": summary.builds,
            "labels": _labels(bench, backend, tmp / f"{backend}-checks", work),
        }
    return results


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "docker", "toolchains")
@pytest.mark.timeout(2400)
@pytest.mark.parametrize("backend", BACKENDS)
def test_strong_suite_outcomes_as_designed(replays, backend):
    got = replays[backend]
    assert got["outcomes"] == _expected()
    assert got["isolation"] == {"bubblewrap" if backend == "local" else "container"}
    assert got["builds"] == 2 * 11  # every state of both instances built once, though F runs ran twice


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "docker", "toolchains")
@pytest.mark.timeout(2400)
def test_local_and_docker_agree_run_by_run(replays):
    assert replays["local"]["outcomes"] == replays["docker"]["outcomes"]
    assert replays["local"]["labels"] == replays["docker"]["labels"]


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "docker", "toolchains")
@pytest.mark.timeout(2400)
@pytest.mark.parametrize("backend", BACKENDS)
def test_official_checks_label_every_candidate_as_the_benchmark_does(replays, backend):
    bench = load_benchmark(BUNDLED)
    recorded = {(iid, c.id): (c.label, frozenset(c.failed_checks or ()))
                for iid in INSTANCES for c in bench.instances[iid].candidates}
    assert replays[backend]["labels"] == recorded


def _run(command: list[str], cwd: Path) -> None:
    subprocess.run(command, cwd=cwd, check=False, capture_output=True, timeout=300)


@pytest.mark.requires("toolchains")  # cmake, g++ (and libgtest-dev, which .ci/setup installs with them)
def test_ctest_and_googletest_ids_from_their_real_output(tmp_path):
    """CTest names a case by its test name (classname = name); GoogleTest by its suite
    (classname) and test, value-parametrised tests as `Test/N` of `Prefix/Suite`: ids are
    CTest's test names and GoogleTest's `Suite.Test`, as --gtest_filter spells them."""
    (tmp_path / "CMakeLists.txt").write_text(textwrap.dedent("""\
        cmake_minimum_required(VERSION 3.21)
        project(ids C CXX)
        find_package(GTest REQUIRED)
        enable_testing()
        add_executable(plain plain.c)
        add_test(NAME ring.passes COMMAND plain 0)
        add_test(NAME ring.fails COMMAND plain 1)
        add_executable(gt gt.cpp)
        target_link_libraries(gt GTest::gtest_main)
        """))
    (tmp_path / "plain.c").write_text("#include <stdlib.h>\nint main(int c, char **v) { return atoi(v[1]); }\n")
    (tmp_path / "gt.cpp").write_text(textwrap.dedent("""\
        #include <gtest/gtest.h>
        TEST(Cache, Hits) { EXPECT_EQ(1, 1); }
        TEST(Cache, Misses) { EXPECT_EQ(1, 2); }
        TEST(CacheMore, Hits) { EXPECT_EQ(1, 2); }
        class Even : public ::testing::TestWithParam<int> {};
        TEST_P(Even, Holds) { EXPECT_EQ(GetParam() % 2, 0); }
        INSTANTIATE_TEST_SUITE_P(Nums, Even, ::testing::Values(2, 3));
        INSTANTIATE_TEST_SUITE_P(Evens, Even, ::testing::Values(4, 6));
        """))
    _run(["cmake", "-S", ".", "-B", "build"], tmp_path)
    _run(["cmake", "--build", "build"], tmp_path)
    _run(["ctest", "--test-dir", "build", "--output-junit", str(tmp_path / "ctest.xml")], tmp_path)
    _run([str(tmp_path / "build" / "gt"), f"--gtest_output=xml:{tmp_path / 'gtest.xml'}"], tmp_path)

    ctest = parse_junit((tmp_path / "ctest.xml").read_bytes())
    assert select(ctest, ("ring.passes", "ring.fails", "ring")) == {
        "ring.passes": "passed", "ring.fails": "failed", "ring": "missing"}
    gtest = parse_junit((tmp_path / "gtest.xml").read_bytes())
    assert select(gtest, ("Cache.Hits", "Cache.Misses", "CacheMore.Hits", "Cache::Hits", "Nums/Even.Holds",
                          "Evens/Even.Holds", "Cache", "Hits", "Even.Holds")) == {
        "Cache.Hits": "passed", "Cache.Misses": "failed", "CacheMore.Hits": "failed",
        "Cache::Hits": "passed",  # the classname::name form every runner's cases also answer to
        "Nums/Even.Holds": "failed", "Evens/Even.Holds": "passed",  # Holds/0 and Holds/1 are its parts
        "Cache": "missing",
        "Hits": "failed",  # a bare name: every suite's Hits (as for Go's and pytest's bare names)
        "Even.Holds": "missing",  # an instantiation's suite is Prefix/Even
    }


def test_c_and_cpp_syntax_records():
    """Functions are named through their declarators (C++ methods defined outside their
    class as `Type.method`, as inside it); GoogleTest's TEST macros are tests named
    `Suite.Test`, its runner's ids; C has no test rule (its build registers its tests)."""
    from testprism.tasks.model import syntax

    c = syntax.parse(syntax.C, "static const char *name(int *p) { return \"a b\"; }\nint main(void) { return 0; }\n")
    assert [u.name for u in syntax.units(syntax.C, c)] == ["name", "main"]
    assert syntax.C.tests is None and syntax.language_of("src/ringbuf.h") is syntax.C
    source = textwrap.dedent("""\
        namespace lru {
        class Cache { public: int get(int k) const { return k; } };
        int Cache::put(int k) { return k; }
        }
        TEST(LruCache, GetRefreshes) { EXPECT_EQ(1, 1); }
        namespace { TEST_F(Fixture, Works) {
          ASSERT_TRUE(true);
        } }
        """)
    cpp = syntax.parse(syntax.CPP, source)
    assert [u.name for u in syntax.units(syntax.CPP, cpp)] == [
        "lru.Cache.get", "lru.Cache.put", "LruCache.GetRefreshes", "Fixture.Works"]
    assert list(syntax.CPP.tests(syntax.CPP, cpp)) == [("LruCache.GetRefreshes", 5, 5), ("Fixture.Works", 6, 8)]
    assert syntax.named("cpp") is syntax.CPP and syntax.language_of("tests/lru_cache_test.cpp") is syntax.CPP
