"""Runner-log fixture: every outcome sympy's bin/test reports with --verbose.

Copied into a SymPy source release's sympy/utilities/tests/ by make_logs.sh.
"""
from sympy.testing.pytest import raises, skip, XFAIL


def test_passes():
    assert 1 + 1 == 2


def test_fails():
    assert 1 + 1 == 3


def test_errors():
    raise TypeError("boom")


def test_skipped():
    skip("not today")


@XFAIL
def test_expected_failure():
    assert 1 == 2


@XFAIL
def test_unexpected_pass():
    pass


def test_prints():
    print("test_fake ok")


def test_raises():
    raises(ZeroDivisionError, lambda: 1 / 0)
