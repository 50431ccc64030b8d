"""The process's one embedder: loaded in the background, run on one worker thread.

Queries go ahead of bulk work: bulk callers submit small chunks, so a search waits for at most
one chunk, never for a whole document or batch. Callers that need the model wait for it to load;
nothing else does.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from reos_memory.embeddings.base import Embedder, EmbedderUnavailableError
from reos_memory.errors import EmbedderUnavailable

if TYPE_CHECKING:  # numpy loads with the model, off the start-up path
    import numpy as np

QUERY = 0  # priorities: lower runs first
BULK = 1


class EmbeddingService:
    """State machine: disabled | loading -> ready | failed."""

    def __init__(
        self, backend: str, factory: Callable[[], Embedder] | None, log: Any = None
    ) -> None:
        self.backend = backend
        self._factory = factory
        self._log = log
        self._embedder: Embedder | None = None
        self._ready = threading.Event()
        self.state = "disabled" if factory is None else "loading"
        self.detail: str | None = (
            "no embedder configured (--embedder none): semantic search is off; keyword and graph search work"
            if factory is None
            else None
        )
        self.load_seconds: float | None = None
        self._queue: queue.PriorityQueue[tuple[int, int, Any]] = queue.PriorityQueue()
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False
        if factory is None:
            self._ready.set()

    def start(self) -> None:
        """Start loading the model on the worker thread (returns at once)."""
        with self._start_lock:
            if self._factory is None or self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(target=self._run, name="embedder", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        t0 = time.perf_counter()
        try:
            assert self._factory is not None
            self._embedder = self._factory()
            self.state = "ready"
            self.load_seconds = round(time.perf_counter() - t0, 3)
            if self._log:
                self._log.info(
                    "embedder_ready",
                    backend=self.backend,
                    model=self._embedder.model_id,
                    seconds=self.load_seconds,
                )
        except EmbedderUnavailableError as exc:
            self.state, self.detail = "failed", str(exc)
        except Exception as exc:  # a broken install must not take the service down
            self.state, self.detail = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            if self.state == "failed" and self._log:
                self._log.warning("embedder_failed", backend=self.backend, detail=self.detail)
            self._ready.set()
        while True:
            _, _, job = self._queue.get()
            if job is None:
                return
            texts, fut = job
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(self._embedder.embed(texts) if self._embedder else None)
            except Exception as exc:
                fut.set_exception(exc)

    # -- queries -----------------------------------------------------------------------------

    def wait_ready(self, timeout: float | None = 60.0) -> Embedder | None:
        """The embedder once loaded; None if there is none (disabled or failed to load). A
        model not started yet (an App started with `defer_model`) starts loading now."""
        self.start()
        self._ready.wait(timeout)
        return self._embedder if self.state == "ready" else None

    @property
    def started(self) -> bool:
        """Whether the model was asked for (it may still be loading)."""
        return self._thread is not None

    @property
    def model_id(self) -> str | None:
        return self._embedder.model_id if self._embedder else None

    @property
    def dimensions(self) -> int | None:
        return self._embedder.dimensions if self._embedder else None

    def status(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "status": self.state,
            "model_id": self.model_id,
            "dimensions": self.dimensions,
            "detail": self.detail,
            "load_seconds": self.load_seconds,
        }

    def submit(
        self, texts: Sequence[str], *, priority: int = QUERY, timeout: float = 120.0
    ) -> Future[np.ndarray]:
        """Queue texts for the worker thread; raises EmbedderUnavailable when there is no model."""
        if self.wait_ready(timeout) is None:
            raise EmbedderUnavailable(
                f"no embedding model: {self.detail or self.state}",
                backend=self.backend,
                status=self.state,
            )
        fut: Future[np.ndarray] = Future()
        self._queue.put((priority, next(self._seq), (list(texts), fut)))
        return fut

    def embed(
        self, texts: Sequence[str], *, priority: int = QUERY, timeout: float = 120.0
    ) -> np.ndarray:
        """Embed on the worker thread and wait for the vectors."""
        return self.submit(texts, priority=priority, timeout=timeout).result(timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Stop the worker after queued work; waits so the process never exits mid-load."""
        with self._start_lock:
            self._closed = True  # a model never asked for is not loaded on the way out
            if self._thread is None:
                self._ready.set()  # nobody waits for it either
        if self._thread is not None:
            self._queue.put((99, next(self._seq), None))
            self._thread.join(timeout)
