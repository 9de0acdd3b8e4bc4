# Runner-log fixture: run-tests.py compares MicroPython's output with CPython's; this test's
# differ (each prints its own implementation's name), so it FAILs. make_logs.sh copies it into
# a micropython checkout's tests/basics/, where `-i string_format` picks it up.
import sys

print("{} formats".format(sys.implementation.name))
