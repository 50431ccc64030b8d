"""The team server's PostgreSQL store: connections, migrations and SQL per table (psycopg 3).

psycopg is imported here and nowhere above `store/`; only the `team` extra installs it."""
