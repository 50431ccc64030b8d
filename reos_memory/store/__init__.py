"""SQLite storage: connections, transactions, migrations and the SQL for each table."""

from reos_memory.store.connection import Connection, Database, fetch, scalar

__all__ = ["Connection", "Database", "fetch", "scalar"]
