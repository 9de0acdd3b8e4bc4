"""The curate stage."""
