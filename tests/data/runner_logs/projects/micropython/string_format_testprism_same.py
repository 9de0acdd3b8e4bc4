# Runner-log fixture: the same output under MicroPython and CPython: a pass.
print("{:>6}|{:<4}|{:^5}".format("abc", 12, "x"))
