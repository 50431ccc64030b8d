"""structlog JSON lines on stderr; stdout belongs to the protocol."""

from __future__ import annotations

import logging
import sys

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
