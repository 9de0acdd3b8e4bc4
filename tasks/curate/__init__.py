"""Curation: from many source benchmarks to a reproducible, stratified, audited instance set
(docs/curate.md): source adapters, selection signals, bounds, dedup, the reference-test
audit by a judge, the difficulty filter and the repository-disjoint split."""
