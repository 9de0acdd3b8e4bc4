"""A value above every element goes to the end."""
from algokit.search import insertion_point

assert insertion_point([10, 20, 30], 40) == 3
assert insertion_point([10, 20, 30], 25) == 3, "25 goes after 20"
