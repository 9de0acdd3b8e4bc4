def two_fer(name="you"):
    pass
