"""Runner-log fixture: a module that cannot be imported (a collection error)."""
import module_that_does_not_exist  # noqa: F401


def test_never_runs():
    pass
