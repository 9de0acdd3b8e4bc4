"""Curation: from many source benchmarks to a reproducible, stratified, audited instance set."""
