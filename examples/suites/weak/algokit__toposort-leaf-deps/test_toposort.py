from algokit import toposort


def test_issue_example():
    order = toposort({"app": ["lib", "log"], "lib": ["core"]})
    assert sorted(order) == ["app", "core", "lib", "log"]
    assert order.index("core") < order.index("lib") < order.index("app")
    assert order.index("log") < order.index("app")
