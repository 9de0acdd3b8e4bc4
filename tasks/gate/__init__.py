"""The release gate (`testprism check`, docs/gate.md): per imported row, whether its official
checks make the fail-to-pass transition (buggy fails, reference passes, the empty patch
resolves nothing), and a checksum manifest of the benchmark folder the rows were read from."""
