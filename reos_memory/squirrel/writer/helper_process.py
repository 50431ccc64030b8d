"""A second process for a large catch-up (`sqrl ingest` over many megabytes of session logs).

Python runs one thread at a time. Reading, parsing and redacting the logs keeps one core busy;
the offline Memory Writer (its rules, its commits with their embeddings) would share that core
through the GIL. A helper process runs it instead, on the other core, with its own connection
to the same database and its own model.

Each task the helper runs is the code the in-process path runs, in the same transactions, so a
helper that fails leaves nothing half-done: `ingest_paths` stops it at its first failure and
does what it had not finished (a claim of a dead process is taken over at once). The helper
never outlives its caller: the kernel ends it when the caller dies (Linux), and `close` waits
for it to exit. Ctrl-C is the caller's alone.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from reos_memory.squirrel.api import EpisodeRun
    from reos_memory.squirrel.facade import Squirrel


class Opened(Protocol):
    """What the helper opens on the database: the services, as the composition root builds them."""

    @property
    def squirrel(self) -> Squirrel: ...

    def close(self) -> None: ...


# How the helper opens its services: "module:function", called as `function(config, embedder)`
# in the helper (named, not imported here: the caller starts the helper before its own imports,
# and the composition root is above this layer), e.g. "reos_memory.app:open_helper".
Opener = str

_APP: Opened | None = None  # the helper process's own services


def wanted(config: Any, paths: Iterable[str]) -> bool:
    """Whether a catch-up over `paths` is worth a helper: the offline writer (an LLM writer
    waits on the network, which threads overlap well), two cores or more, and at least
    `ingest_helper_min_mb` of logs (0: never)."""
    if config.ingest_helper_min_mb <= 0 or config.db == ":memory:" or _cores() < 2:
        return False
    llm = config.llm_provider != "none" and bool(config.llm_model)  # as App.llm() reads them
    if config.writer in ("llm", "claude-code", "codex") or (config.writer == "auto" and llm):
        return False
    need = config.ingest_helper_min_mb * 1e6
    total = 0
    from reos_memory.squirrel.ingest.ingest import find

    for path in find(paths):
        try:
            total += os.stat(path).st_size
        except OSError:
            continue
        if total >= need:
            return True
    return False


def _cores() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Helper:
    """One helper process with an App on the database of `config`; started at once, so its
    start-up overlaps the caller's."""

    def __init__(self, opener: Opener, config: Any, embedder: str | None = None) -> None:
        self._pool = ProcessPoolExecutor(
            1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start,
            initargs=(opener, config, embedder, os.getpid()),
        )
        # {"pid", "dies_with_parent"} once the process is up
        self.ready: Future[dict[str, Any]] = self._pool.submit(_hello)

    def learn(self, episode: EpisodeRun) -> Future[EpisodeRun]:
        """`Squirrel.after_cut(episode, process=True)` in the helper."""
        return self._pool.submit(_learn, episode)

    def stop(self) -> None:
        """End the process now (after a failure): what it had not finished fails (the pool,
        broken, fails it) and the claims it held die with it. Often called from a callback of
        one of its futures, on the pool's own thread, so it never shuts the pool down: Python
        3.13 holds the pool's shutdown lock while it runs those callbacks (a shutdown there
        deadlocked), and a shutdown without waiting could leave that thread replacing the dead
        process (CPython gh-132969). `close`, called by the owner, shuts it down."""
        try:
            # its first task: until it is back no other has begun (the pool may have handed the
            # process the next ones already, so it must end, not just stop taking tasks)
            pids = [self.ready.result(30)["pid"]]
        except Exception:  # it died starting (nothing of ours runs there), or is stuck starting
            pids = list(getattr(self._pool, "_processes", None) or {})
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        """Let the process exit and wait for it. Tasks not begun yet are dropped: a caller that
        finished has none left, and one leaving on an error wants none."""
        self._pool.shutdown(wait=True, cancel_futures=True)


# -- in the helper process ----------------------------------------------------------------------


def _start(opener: Opener, config: Any, embedder: str | None, parent: int) -> None:
    global _APP
    _die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the caller, which stops us
    import importlib
    from multiprocessing import util

    from reos_memory.squirrel.writer import offline  # noqa: F401 - loaded before the first task

    module, _, name = opener.partition(":")
    open_services: Callable[[Any, str | None], Opened] = getattr(
        importlib.import_module(module), name
    )
    _APP = open_services(config, embedder)
    # a clean close (its vectors, its connection) when the pool lets the process go
    util.Finalize(_APP, _close_and_exit, exitpriority=10)


def _hello() -> dict[str, Any]:
    return {"pid": os.getpid(), "dies_with_parent": _death_signal() == signal.SIGTERM}


def _libc() -> Any:
    """The C library, for prctl (None when not on Linux or not loadable)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    return libc if hasattr(libc, "prctl") else None


def _death_signal() -> int:
    """The signal this process gets when its parent dies (0: none, or not Linux)."""
    import ctypes

    libc = _libc()
    sig = ctypes.c_int(0)
    if libc is not None:
        libc.prctl(2, ctypes.byref(sig))  # PR_GET_PDEATHSIG
    return sig.value


def _close_and_exit() -> None:
    """Close the App, then leave at once: every result has been sent (synchronously), and
    tearing the interpreter down (the model's session, its arrays) would only keep the caller
    waiting for this process to end."""
    assert _APP is not None
    _APP.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _die_with(parent: int) -> None:
    """Have the kernel end this process when its parent dies (Linux); elsewhere the parent's
    `close` is what ends it."""
    libc = _libc()
    if libc is None:
        return
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before the call above
        os._exit(1)


def _learn(episode: EpisodeRun) -> EpisodeRun:
    assert _APP is not None
    return _APP.squirrel.writer.after_cut(episode, True)
