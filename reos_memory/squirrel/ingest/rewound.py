"""The cursor of a log rewritten whole whose entries are counted (Cline's `ui_messages.json`,
a Windsurf trajectory, a Copilot `.json` session, a legacy Gemini document): such a log is cut
back (a checkpoint restored, a step reverted, a request edited and sent again) and then grows
again, so a count alone would skip what was written below it after the cut.

The position is the count of entries read and, in its low bits, a fingerprint of the last one
(`position`). When that entry is no longer where it was (or the log holds fewer entries), the
log was cut back: the records start with a probe that the adapter's `parse` answers from the
fingerprints of the entries it read (`answer`, kept by `remember`): reading resumes after the
last entry of the log it has read, and only what is new is read.

A cursor stored before (a plain count, below 2**SHIFT) is read as such.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from reos_memory.squirrel.ingest.base import ParseState, Record

SHIFT = 24  # bits of the fingerprint (a cut back goes unnoticed once in 16 million)
_MASK = (1 << SHIFT) - 1
MAX_READ = 512  # fingerprints of the entries read, the latest (how far back a cut is placed)
PROBE = "\x00cut back"  # the probe record's key: the fingerprints of the log's entries


def fingerprint(key: str) -> int:
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=3).digest()
    return int.from_bytes(digest, "big")


def position(keys: Sequence[str], n: int) -> int:
    """The position after the first `n` entries (keyed `keys`)."""
    return (n << SHIFT) | fingerprint(keys[n - 1]) if n else 0


def where(pos: int) -> tuple[int, int | None]:
    """The count of entries read and the fingerprint of the last one (None: a plain count)."""
    if pos <= _MASK:
        return pos, None
    return pos >> SHIFT, pos & _MASK


def replay(keys: Sequence[str], pos: int, make: Callable[[int], Record | None]) -> Iterator[Record]:
    """The records of the entries from where `pos` says on, each made by `make(i)` (None: stop
    there, the entry is still being written); a probe first when the log was cut back."""
    n, mark = where(pos)
    start = n
    if n > len(keys) or (n and mark is not None and fingerprint(keys[n - 1]) != mark):
        probe: dict[str, Any] = {PROBE: [fingerprint(k) for k in keys], "read": n}
        yield Record(pos, probe)
        got = probe.get("from")  # (the adapter's answer)
        start = got if isinstance(got, int) and 0 <= got <= len(keys) else min(n, len(keys))
        yield Record(position(keys, start), None)  # the cursor placed there, even if no more
    for i in range(start, len(keys)):
        rec = make(i)
        if rec is None:
            return
        rec.end = position(keys, i + 1)
        yield rec


def answer(record: dict[str, Any], state: ParseState) -> bool:
    """Whether `record` is a probe; if so it is answered: read on after the last entry of the
    log that was read before (past the ones of the cut-back log that were, when none is
    remembered any more)."""
    fps = record.get(PROBE)
    if not isinstance(fps, list):
        return False
    state.count("cut_back")
    read = state.extra.get("entries_read")
    read = read if isinstance(read, list) else []
    known = set(read)
    last = max((j for j, f in enumerate(fps) if f in known), default=-1)
    if last >= 0:
        record["from"] = last + 1
    else:
        n = record.get("read")
        n = n if isinstance(n, int) else len(fps)
        record["from"] = min(max(n - len(read), 0), len(fps))
    return True


def remember(state: ParseState, key: str) -> None:
    """An entry read (by its key: what stays the same while it is rewritten)."""
    read = state.extra.get("entries_read")
    if not isinstance(read, list):
        read = state.extra["entries_read"] = []
    read.append(fingerprint(key))
    del read[: max(0, len(read) - MAX_READ)]
