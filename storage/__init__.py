"""The Parquet store: what is kept, under which names, written so that nothing is half-written.

`storage` knows tables and files only; it never imports `tasks` or `flows` and knows nothing
of sandboxes.

The names below load on first use: `storage.owner` and `storage.paths` are read by code
that never touches a table (the work area's locks, the CLI's `--help`), and importing this
package must not cost them polars and pyarrow.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from testprism.storage.paths import StorePaths
    from testprism.storage.schema import SCHEMA_VERSION, SCHEMAS
    from testprism.storage.store import Store, StoreError

#: public name -> the module that defines it
_PUBLIC = {
    "StorePaths": "testprism.storage.paths",
    "SCHEMA_VERSION": "testprism.storage.schema",
    "SCHEMAS": "testprism.storage.schema",
    "Store": "testprism.storage.store",
    "StoreError": "testprism.storage.errors",
}

__all__ = ["SCHEMA_VERSION", "SCHEMAS", "Store", "StoreError", "StorePaths"]


def __getattr__(name: str) -> Any:
    try:
        module = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'testprism.storage' has no attribute {name!r}") from None
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
