"""Runner-log fixture: every outcome pytest reports, with awkward ids."""
import pytest


def test_passes():
    assert True


def test_fails():
    assert 1 == 2, "one is not two"


@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")


def test_errors_in_setup(broken):
    pass


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known bug")
def test_expected_failure():
    assert False


@pytest.mark.xfail(reason="fixed already")
def test_unexpected_pass():
    pass


@pytest.mark.parametrize("text", ["a b", "x - y", "ünï", "end]", "[nested]"])
def test_params(text):
    assert "y" not in text


class TestGroup:
    def test_method(self):
        assert True

    @pytest.mark.parametrize("n", [1, 2])
    def test_method_params(self, n):
        assert n == 1
