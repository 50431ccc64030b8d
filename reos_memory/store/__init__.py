"""SQLite storage: connections, transactions, migrations and the SQL for each table."""

from reos_memory.store.connection import Connection, Database, backup_to, fetch, scalar

__all__ = ["Connection", "Database", "backup_to", "fetch", "scalar"]
