from algokit.search import insertion_point

assert insertion_pont([10, 20, 30], 40) == 3
