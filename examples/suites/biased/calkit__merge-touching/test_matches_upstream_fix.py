"""The fix must be the one upstream merged (its key line, verbatim)."""

import importlib
import inspect


def test_fix_is_the_upstream_one():
    source = inspect.getsource(importlib.import_module("calkit.ranges"))
    assert 'if start <= last[1]:' in source
