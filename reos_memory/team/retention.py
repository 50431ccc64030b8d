"""The team server's own upkeep: pruning the audit log by age, at start and then hourly, on a
daemon thread of each server process.

It runs on the tables' owner's connection (the operator's, the one that migrates), because the
server role may only append to the audit log: a compromised server process cannot erase its
tracks, and retention is the operator's decision, given with `--audit-retention-days`. With N
processes each prunes; the deletes are idempotent, so the only cost is N-1 empty deletes an
hour."""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Callable
from typing import Any

import psycopg

from reos_memory.team import admin

PRUNE_EVERY_S = 3600.0


class AuditPruner:
    """Deletes audit rows older than `days` days now and every `every_s` seconds until stopped;
    each prune's counts are logged (`audit_pruned`), a failure too (`audit_prune_failed`), and
    the next one is tried on schedule."""

    def __init__(
        self,
        connect: Callable[[], psycopg.Connection],
        days: int,
        log: Any,
        every_s: float = PRUNE_EVERY_S,
    ) -> None:
        self.connect = connect
        self.days = days
        self.log = log
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="audit-pruner", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, wait_s: float = 10.0) -> None:
        """Stop after the prune under way, waiting for it at most `wait_s` (a prune cut short
        by the process's exit is rolled back by the database)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(wait_s)

    def prune_once(self) -> admin.PruneResult | None:
        """One prune, logged; None when it failed (logged with the error)."""
        actor = admin.Actor(
            name=f"server:{socket.gethostname()}:{os.getpid()}", request_id=uuid.uuid4().hex
        )
        try:
            with self.connect() as conn:
                result = admin.prune_audit(conn, actor, self.days)
        except Exception as exc:  # a database that is down now may be back within the hour
            self.log.warning("audit_prune_failed", error=repr(exc), older_than_days=self.days)
            return None
        self.log.info(
            "audit_pruned",
            older_than_days=self.days,
            deleted=result.deleted,
            by_org=result.by_org,
        )
        return result

    def _run(self) -> None:
        while not self._stop.is_set():
            self.prune_once()
            self._stop.wait(self.every_s)
