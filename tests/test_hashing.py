"""tasks/model/hashing.py `tree_digest` on a program holding symbolic links (a real SWE-bench Pro
row's program, navidrome, has a dangling one among its test fixtures)."""

from __future__ import annotations

import os
from pathlib import Path

from testprism.tasks.model.hashing import tree_digest


def tree(root: Path, link_to: str) -> Path:
    (root / "fixtures").mkdir(parents=True)
    (root / "fixtures" / "index.html").write_text("<p>")
    os.symlink(link_to, root / "fixtures" / "synlink_invalid")
    return root


def test_a_dangling_link_is_hashed_by_where_it_points(tmp_path):
    first = tree_digest(tree(tmp_path / "a", "INVALID"))
    assert first == tree_digest(tree(tmp_path / "b", "INVALID"))
    assert first != tree_digest(tree(tmp_path / "c", "OTHER"))


def test_a_link_out_of_the_tree_is_not_followed(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("one")
    program = tree(tmp_path / "program", str(outside))
    before = tree_digest(program)
    outside.write_text("two")
    assert tree_digest(program) == before
