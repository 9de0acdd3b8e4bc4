from algokit.search import insertion_point

assert insertion_point([10, 20, 30], 40, keyfunc=None) == 3
