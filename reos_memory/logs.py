"""structlog JSON lines on stderr; stdout belongs to the protocol."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable

# structlog.dev loads rich, when installed, for pretty consoles (~60 ms); our logs are JSON lines,
# so hide it for this one import. The entry is removed again: other libraries see rich as usual.
_hidden = "rich" not in sys.modules
if _hidden:
    sys.modules["rich"] = None  # type: ignore[assignment]
try:
    import structlog
    from structlog.typing import FilteringBoundLogger as Log  # what a log line goes through
finally:
    if _hidden:
        del sys.modules["rich"]


def setup_logging(level: str = "info") -> Log:
    """Configure structlog to write JSON lines to stderr and return a logger."""
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    log: Log = structlog.get_logger("reos_memory")
    return log


class OncePer(logging.Filter):
    """Lets one record of each message through per `seconds`: a loop that fails the same way
    many times a second (asyncio's accept() out of file descriptors, with its traceback each
    time) fills a disk with copies of one line."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.seconds = seconds
        self.clock = clock
        self._last: dict[tuple[str, str], float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg)[:200])
        now = self.clock()
        if now - self._last.get(key, float("-inf")) < self.seconds:
            return False
        if len(self._last) > MAX_QUIETED:
            self._last.clear()
        self._last[key] = now
        return True


MAX_QUIETED = 1_000  # distinct messages remembered


def quiet_repeats(names: tuple[str, ...] = ("asyncio",), seconds: float = 60.0) -> None:
    """One record a message per `seconds` from the standard loggers `names`."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, OncePer) for f in logger.filters):
            logger.addFilter(OncePer(seconds))
