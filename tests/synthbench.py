"""A benchmark of many tiny instances whose suites are shell one-liners: hundreds of real
sandbox runs in seconds, for resume and concurrency tests."""

from __future__ import annotations

from pathlib import Path

from tests.benchfixture import diff, write


def make_synthetic(root: Path, instances: int, valid: int = 4, invalid: int = 5) -> Path:
    """Each program holds `impl.txt` = "bug"; the reference and valid candidates make it
    start with "fixed", invalid ones with "broken". Suite `good` greps for "fixed" (a
    perfect suite); suite `lax` always passes (GRR 0, WDR 0)."""
    for n in range(instances):
        iid = f"synth__{n:04d}"
        inst = root / "instances" / iid
        write(inst / "program" / "impl.txt", "bug\n")
        write(inst / "instruction.md", "impl.txt must say fixed\n")
        write(inst / "reference.diff", diff("impl.txt", "bug\n", "fixed\n"))
        write(inst / "checks.diff", diff("check.sh", "", "grep -q '^fixed' impl.txt\n"))
        toml = (f'id = "{iid}"\nsource = "synth{n % 3}"\n[environment]\npackages = []\n[checks]\n'
                'command = "bash check.sh"\nfail_to_pass = ["check"]\n')
        for k in range(valid + invalid):
            label, text = ("valid", f"fixed-{k}\n") if k < valid else ("invalid", f"broken-{k}\n")
            write(inst / "candidates" / f"c{k}.diff", diff("impl.txt", "bug\n", text))
            toml += f'[[candidates]]\nid = "c{k}"\nlabel = "{label}"\npatch = "candidates/c{k}.diff"\n'
        write(inst / "instance.toml", toml)
        write(root / "suites" / "good" / iid / "run_tests.sh", "grep -q '^fixed' impl.txt\n")
        write(root / "suites" / "lax" / iid / "run_tests.sh", "exit 0\n")
    return root
