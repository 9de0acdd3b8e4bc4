"""The loader names the file and the field of every mistake."""

from __future__ import annotations

import pytest

from testprism.tasks.model.benchmark import BenchmarkError, load_benchmark
from tests.benchfixture import CHECKS, make_benchmark


@pytest.fixture()
def root(tmp_path):
    return make_benchmark(tmp_path / "b", {"strong": {"test_m.py": CHECKS}})


def toml_of(root):
    return root / "instances" / "mini__median-even" / "instance.toml"


def test_valid_benchmark_loads(root):
    bench = load_benchmark(root)
    inst = bench.instances["mini__median-even"]
    assert [c.id for c in inst.candidates] == ["stdlib", "sorts-in-place"]
    assert bench.configurations == ("strong",)
    assert bench.suites[("strong", "mini__median-even")].files == ("run_tests.sh", "test_m.py")


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (lambda t: t.replace('command = "', 'commandx = "'), "checks.command", "Field required"),
        (lambda t: t.replace('label = "valid"', 'label = "right"'), "candidates.0.label", "'valid' or 'invalid'"),
        (lambda t: t.replace('id = "mini__median-even"', 'id = "other"'), "id", "differs from its folder name"),
        (lambda t: t.replace("[checks]", "[checks"), "(syntax)", ""),
        (lambda t: t + "\nsurprise = 1\n", "candidates.1.surprise", "Extra inputs"),
    ],
)
def test_bad_instance_toml_names_file_and_field(root, edit, field, message):
    path = toml_of(root)
    path.write_text(edit(path.read_text()))
    with pytest.raises(BenchmarkError) as err:
        load_benchmark(root)
    assert err.value.path == path and err.value.field == field
    assert message in str(err.value) and str(path) in str(err.value)


def test_failed_checks_are_official_checks_of_an_invalid_candidate(root):
    path = toml_of(root)
    text = path.read_text()
    path.write_text(text.replace('label = "invalid"', 'label = "invalid"\nfailed_checks = '
                                 '["tests/test_official.py::test_input_untouched"]'))
    invalid = load_benchmark(root).instances["mini__median-even"].candidates[1]
    assert invalid.failed_checks == frozenset({"tests/test_official.py::test_input_untouched"})
    for edit, field, message in (
        (('label = "invalid"', 'label = "invalid"\nfailed_checks = ["tests/test_official.py::test_nothing"]'),
         "candidates.1.failed_checks", "['tests/test_official.py::test_nothing'] are not in checks.fail_to_pass"),
        (('label = "valid"', 'label = "valid"\nfailed_checks = ["tests/test_official.py::test_even_length"]'),
         "candidates.0.failed_checks", "only an invalid candidate fails official checks"),
        (('label = "invalid"', 'label = "invalid"\nfailed_checks = []'), "candidates.1.failed_checks", "at least 1"),
    ):
        path.write_text(text.replace(*edit))
        with pytest.raises(BenchmarkError) as err:
            load_benchmark(root)
        assert err.value.path == path and err.value.field == field, err.value
        assert message in str(err.value)


def test_patch_that_is_not_a_diff(root):
    patch = root / "instances" / "mini__median-even" / "candidates" / "stdlib.diff"
    patch.write_text("this is prose, not a patch\n")
    with pytest.raises(BenchmarkError, match=r"stdlib\.diff: field candidates\.0\.patch: not a unified diff"):
        load_benchmark(root)


def test_patch_escaping_the_program_is_refused(root):
    patch = root / "instances" / "mini__median-even" / "reference.diff"
    patch.write_text("--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-x\n+y\n")
    with pytest.raises(BenchmarkError, match="escapes the program"):
        load_benchmark(root)


def test_suite_for_unknown_instance_and_empty_suite(root):
    (root / "suites" / "strong" / "no-such-instance").mkdir()
    with pytest.raises(BenchmarkError, match="field instance_id: no instance 'no-such-instance'"):
        load_benchmark(root)
    (root / "suites" / "strong" / "no-such-instance").rmdir()
    for f in (root / "suites" / "strong" / "mini__median-even").iterdir():
        f.unlink()
    bench = load_benchmark(root)
    assert "the suite is empty" in bench.suite_errors[("strong", "mini__median-even")]


def test_missing_entry_script(root):
    (root / "suites" / "strong" / "mini__median-even" / "run_tests.sh").unlink()
    bench = load_benchmark(root)
    assert "run_tests.sh: field (file): missing" in bench.suite_errors[("strong", "mini__median-even")]
