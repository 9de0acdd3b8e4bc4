"""The store's one error type, apart from the store itself so that the CLI can name it
(flows/errors.py: a user's mistake, exit 2) without importing polars and pyarrow."""


class StoreError(RuntimeError):
    """The store cannot be used as asked (wrong schema version, bad table)."""
