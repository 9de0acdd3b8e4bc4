from algokit.search import insertion_point

print(insertion_point([1, 2, 3], 4, lo=-1))
