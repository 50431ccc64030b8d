"""The C heap (glibc): fewer malloc arenas, and freed pages handed back to the OS.

Measured at 100K blocks: a server holds ~15 MB less with two arenas than with glibc's default
(eight per core, one per thread that allocates), and a vector index reload leaves its ~400 MB of
temporaries in the heap unless they are trimmed. Both are no-ops off glibc.
"""

from __future__ import annotations

import ctypes

M_ARENA_MAX = -8  # glibc's mallopt parameter


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt  # noqa: B018 - glibc has it, musl and macOS do not
        libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def limit_arenas(arenas: int = 2) -> None:
    """Cap malloc arenas (call before threads start; MALLOC_ARENA_MAX in the env still wins)."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(M_ARENA_MAX, arenas)


def give_back_freed() -> None:
    """Return freed heap pages to the OS."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
