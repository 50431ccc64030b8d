"""Per-key request rate limits of one team server process: a token bucket per API key id (each
JSON-RPC request of a batch takes a token), and one per client address for failed
authentications, so a flood of bad keys is refused before it reaches the database.

The buckets live in the process's memory: N server processes behind a load balancer allow a
key N times the rate. That is accepted on purpose. The limit exists to keep one key (a runaway
script, a leaked key) from starving the others of a process's threads and database
connections, and it does that per process, where those resources are; a shared counter would
put a database or Redis round trip in front of every request and a new way to fail, to enforce
a number that only needs to be right within a small factor. Lower `--rate-limit` by N when the
total matters.

Buckets are touched only from the event loop's thread, so they need no lock. Idle buckets are
forgotten (a full bucket is the same as none), least recently used first, so a scan from many
addresses cannot grow the table without bound."""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable

MAX_BUCKETS = 100_000


class RateLimiter:
    """Token buckets by name: `rate` tokens a second, up to `burst` held. A request of n tokens
    is let through when the bucket holds min(n, burst) of them and then takes all n (the bucket
    may go negative, so a batch larger than the burst is possible, then paid for by waiting)."""

    def __init__(
        self,
        rate: float,
        burst: float,
        clock: Callable[[], float] = time.monotonic,
        max_buckets: int = MAX_BUCKETS,
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a rate limit needs a rate > 0 and a burst >= 1")
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self.max_buckets = max_buckets
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # tokens, at

    def take(self, name: str, n: int = 1) -> float:
        """Take `n` tokens of `name`'s bucket: 0.0 when allowed, else the seconds to wait until
        they would be (nothing is taken then)."""
        return self._spend(name, n, take=True)

    def wait(self, name: str, n: int = 1) -> float:
        """The seconds until `n` tokens of `name`'s bucket would be let through (0.0: now);
        takes nothing."""
        return self._spend(name, n, take=False)

    def _spend(self, name: str, n: int, take: bool) -> float:
        now = self.clock()
        tokens, at = self._buckets.pop(name, (self.burst, now))
        tokens = min(self.burst, tokens + (now - at) * self.rate)
        need = min(float(n), self.burst)
        wait = 0.0 if tokens >= need else (need - tokens) / self.rate
        if take and not wait:
            tokens -= n
        if tokens < self.burst:  # a full bucket is the same as none: forget it
            self._buckets[name] = (tokens, now)
        while len(self._buckets) > self.max_buckets:
            self._buckets.popitem(last=False)
        return wait


def retry_after(wait_s: float) -> str:
    """A `Retry-After` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(wait_s)))
