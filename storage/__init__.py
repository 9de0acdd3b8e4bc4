"""The Parquet store: what is kept, under which names, written so that nothing is half-written.

`storage` knows tables and files only; it never imports `tasks` or `flows` and knows nothing
of sandboxes.
"""

from testprism.storage.paths import StorePaths
from testprism.storage.schema import SCHEMA_VERSION, SCHEMAS
from testprism.storage.store import Store, StoreError

__all__ = ["SCHEMA_VERSION", "SCHEMAS", "Store", "StoreError", "StorePaths"]
