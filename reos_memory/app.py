"""The composition root: the one place that reads configuration and builds the services of a
database (`App`, which every interface is given as `interfaces.services.Services`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from reos_memory.config import Config, team_api_key
from reos_memory.embeddings.base import Embedder
from reos_memory.embeddings.runtime import EmbeddingService
from reos_memory.graph.api import EmbedderStatus
from reos_memory.index.vectors import Indexer
from reos_memory.logs import setup_logging
from reos_memory.store import Database
from reos_memory.store.migrations import migrate
from reos_memory.store.vectors import recorded_model

if TYPE_CHECKING:
    from reos_memory.llm import LLMClient
    from reos_memory.squirrel.facade import Squirrel


class App:
    """The services of one database, built from configuration: what every interface is given
    (it satisfies `interfaces.services.Services`)."""

    def __init__(self, config: Config, log: Any, make_embedder: Any = None) -> None:
        self.config = config
        self.log = log
        self.db = Database(
            config.db,
            busy_timeout_ms=config.busy_timeout_ms,
            lock_wait_s=config.lock_wait_s,
            synchronous=config.synchronous,
            cache_kib=config.cache_kib,
        )
        applied = migrate(self.db)
        if applied:
            log.info("migrated", database=config.db, applied=applied)
        factory = make_embedder or _embedder_factory(config)
        self.embeddings = EmbeddingService(
            config.embedder, None if factory is None else lambda: self._load(factory), log
        )
        self.indexer = Indexer(
            self.db,
            self.embeddings,
            vector_search=config.vector_search,
            index_shape=(
                config.vector_flat_max,
                config.vector_lists,
                config.vector_probe,
                config.vector_snapshot_min,
            ),
        )
        self.block_redact: Callable[[Any], Any] | None = None
        if config.redact_blocks:
            from reos_memory.squirrel.redaction import redact_value

            self.block_redact = redact_value
        self._llm: LLMClient | None = None
        self._writer_cli: Any = None
        self._squirrel: Squirrel | None = None
        self._squirrel_lock = threading.Lock()
        self._stopping = threading.Event()
        self._catch_up_thread: threading.Thread | None = None
        # waiting (for the model) -> running -> done | failed; off when disabled or no model
        self.catch_up_state = (
            "waiting" if config.catch_up_indexing and factory is not None else "off"
        )

    def start(self) -> None:
        """Load the model in the background; requests that need it wait, others do not."""
        self.embeddings.start()

    def _load(self, factory: Any) -> Embedder:
        try:
            embedder: Embedder = factory()
            dropped = self.indexer.reconcile(embedder)
        except BaseException:
            self.catch_up_state = "off"  # no model, nothing to catch up with
            raise
        if dropped:
            self.log.warning("model_changed", model=embedder.model_id, vectors_dropped=dropped)
        if self.config.catch_up_indexing:
            self.catch_up_state = "running"
            self._catch_up_thread = threading.Thread(
                target=self._catch_up, name="catch-up-index", daemon=True
            )
            self._catch_up_thread.start()
        return embedder

    def _catch_up(self) -> None:
        try:
            if self.indexer.pending_count():
                self.indexer.catch_up(self.log, self._stopping.is_set)
            self.catch_up_state = "done"
        except Exception as exc:  # the next start tries again
            self.catch_up_state = "failed"
            self.log.warning("catch_up_failed", error=repr(exc))

    def llm(self) -> LLMClient | None:
        """The configured LLM client, or None when no provider is configured."""
        from reos_memory.llm import LLMClient, LLMSettings

        c = self.config
        settings = LLMSettings(
            provider=c.llm_provider,
            base_url=c.llm_base_url,
            model=c.llm_model,
            api_key_env=c.llm_api_key_env,
            timeout_s=c.llm_timeout_s,
            max_retries=c.llm_max_retries,
            max_output_tokens=c.llm_max_output_tokens,
        )
        if not settings.enabled:
            return None
        if self._llm is None:
            self._llm = LLMClient(settings)
        return self._llm

    def writer_llm(self) -> Any:
        """The Memory Writer's model: the agent's CLI when `writer` names one, else `llm()`."""
        c = self.config
        if c.writer not in ("claude-code", "codex"):
            return self.llm()
        if self._writer_cli is None:
            from reos_memory.squirrel.writer.agent_cli import AgentCLIClient, CLISettings

            self._writer_cli = AgentCLIClient(
                CLISettings(
                    provider=c.writer,
                    path=c.writer_cli_path,
                    model=c.writer_cli_model,
                    timeout_s=c.writer_cli_timeout_s,
                )
            )
        return self._writer_cli

    @property
    def squirrel(self) -> Squirrel:
        """Squirrel, built on first use (its rules and regexes stay off the start-up path)."""
        with self._squirrel_lock:
            if self._squirrel is None:
                self._squirrel = make_squirrel(
                    self.config, self.db, self.indexer, self.writer_llm, self.log
                )
            return self._squirrel

    def embedder_status(self) -> EmbedderStatus:
        status = self.embeddings.status()
        status["database_model_id"] = self.db.read(recorded_model)
        status["vector_search"] = self.config.vector_search
        status["vector_index"] = self.indexer.index_status()
        return msgspec.convert(status, EmbedderStatus)

    def close_when_written(self) -> None:
        """Let background Memory Writer calls finish, then close. Each call is bounded (the LLM
        timeout and retries, or the agent CLI's timeout); the wait goes on as long as calls keep
        finishing, so a long catch-up through a slow writer is not cut off halfway."""
        config = self.config
        if config.writer in ("claude-code", "codex"):
            per_call = config.writer_cli_timeout_s + 60
        else:
            per_call = config.llm_timeout_s * (config.llm_max_retries + 1) + 30
        left = self.squirrel.writer.unwritten()
        while not self.squirrel.writer.wait_idle(per_call):
            now = self.squirrel.writer.unwritten()
            if now >= left:  # not one call finished in a call's whole time: stop waiting
                break
            left = now
        self.close()

    def close(self) -> None:
        """Stop background work (each unit is one transaction, so nothing is half-written), then close."""
        self._stopping.set()
        if self._squirrel is not None:
            self._squirrel.close()
        if self.embeddings.started:  # a model still loading must finish: exiting mid-load aborts
            self.embeddings.wait_ready(30)
        if self._catch_up_thread is not None:
            self._catch_up_thread.join(60)  # ends after its current chunk, embedder still running
        self.embeddings.close()
        self.indexer.close()
        self.db.checkpoint()
        self.db.close()


def make_squirrel(config: Config, db: Database, indexer: Indexer, llm: Any, log: Any) -> Squirrel:
    """Squirrel over the service's database, embedder and vector machinery."""
    from reos_memory.squirrel.facade import Settings, Squirrel

    c = config
    settings = Settings(
        writer=c.writer,
        owner_id=c.owner_id,
        policy_file=c.policy_file,
        dedup_threshold=c.dedup_threshold,
        max_episode_events=c.max_episode_events,
        writer_min_tool_calls=c.writer_min_tool_calls,
        writer_max_input_tokens=c.writer_max_input_tokens,
        writer_max_output_tokens=c.writer_max_output_tokens,
        writer_daily_token_budget=c.writer_daily_token_budget,
        writer_max_concurrent_calls=c.writer_max_concurrent_calls,
        max_events_per_ingest=c.max_events_per_ingest,
        log_retention_days=c.log_retention_days,
        team_server_url=c.team_server_url,
        team_api_key_set=bool(c.team_server_url) and team_api_key(c) is not None,
        idle_seconds=c.session_idle_minutes * 60.0,
        llm_call_budget_s=(
            c.writer_cli_timeout_s + 30  # one run, and the probe of its options
            if c.writer in ("claude-code", "codex")
            else c.llm_timeout_s * (c.llm_max_retries + 1) + 10 * c.llm_max_retries
        ),
    )
    return Squirrel(db, indexer, settings, llm, log, team=make_team_sync(config, db, indexer, log))


def make_team_sync(config: Config, db: Database, indexer: Indexer, log: Any) -> Any:
    """The team server's pull cache and outbox (None without a URL or without a key)."""
    key = team_api_key(config) if config.team_server_url else None
    if key is None:
        return None
    from reos_memory.squirrel.sync.client import ClientSettings, TeamClient
    from reos_memory.squirrel.sync.sync import SyncSettings, TeamSync

    c = config
    client = TeamClient(
        ClientSettings(
            url=c.team_server_url,
            connect_timeout_s=c.team_connect_timeout_s,
            read_timeout_s=c.team_timeout_s,
            max_retries=c.team_max_retries,
        ),
        key,
    )
    settings = SyncSettings(
        pull_interval_s=c.team_pull_interval_s,
        context_timeout_s=c.team_context_timeout_s,
        share_episodes=c.team_share_episodes,
    )
    return TeamSync(db, indexer, client, settings, log)


def _embedder_factory(config: Config) -> Any:
    """A zero-argument callable building the configured embedder (heavy imports inside)."""
    from pathlib import Path

    if config.embedder == "none":
        return None
    if config.embedder == "hash":
        from reos_memory.embeddings.hashing import HashEmbedder

        return lambda: HashEmbedder(config.hash_dimensions)
    if config.embedder == "sentence-transformers":

        def make_st() -> Embedder:
            from reos_memory.embeddings.locate import locate_model
            from reos_memory.embeddings.sentence_transformers import SentenceTransformerEmbedder

            return SentenceTransformerEmbedder(locate_model())

        return make_st

    def make_onnx() -> Embedder:
        from reos_memory.embeddings.onnx import OnnxEmbedder

        return OnnxEmbedder(Path(config.model_dir), threads=config.onnx_threads or None)

    return make_onnx


def _recorded_embedder(config: Config) -> str | None:
    """The embedder setting matching the model the database records (None when unknown)."""
    import os.path

    if config.db != ":memory:" and not os.path.exists(config.db):
        return None
    db = Database(config.db)
    try:
        migrate(db)
        model = db.read(recorded_model)
    finally:
        db.close()
    if model is None:
        return None
    if model.startswith("reos-hash-v1-"):
        return "hash"
    return None if model == "sentence-transformers/all-MiniLM-L6-v2" else "none"


def open_app(
    config: Config,
    *,
    needs_model: bool,
    embedder: str | None = None,
    wait: bool = True,
    preloaded: dict[str, Any] | None = None,
    defer_model: bool = False,
) -> App:
    """The App a one-shot command (sqrl, a hook) works with: no catch-up indexing; the model
    only when the command embeds something, and then the one the database's vectors come from
    (a command line must never switch a database to another model: that would drop every vector
    the servers rely on). With `wait` false the model may still be loading on return (the caller
    overlaps its own start-up with it, then waits). `preloaded` maps an embedder setting to a
    callable returning that embedder, already being built (a hook starts the model before its own
    imports). With `defer_model` the model loads only when something first needs it (a command
    that may leave all embedding to a helper process). Raises ReosError when the database cannot
    be opened."""
    import msgspec

    changes: dict[str, Any] = {"catch_up_indexing": False}
    if not needs_model:
        changes["embedder"] = "none"
    elif embedder:
        changes["embedder"] = embedder
    else:
        recorded = _recorded_embedder(config)
        if recorded is not None:
            changes["embedder"] = recorded
    cfg = msgspec.structs.replace(config, **changes)
    made = (preloaded or {}).get(cfg.embedder) if needs_model else None
    app = App(cfg, setup_logging("warning"), make_embedder=made)
    try:
        if not defer_model:
            app.start()
        if needs_model and wait and not defer_model:
            app.embeddings.wait_ready(120)
    except BaseException:
        app.close()
        raise
    return app


def open_helper(config: Config, embedder: str | None) -> App:
    """The services of an ingest helper process (`squirrel/writer/helper_process.py`): the model
    loads while the first episodes are cut; the first commit that needs it waits."""
    return open_app(config, needs_model=True, embedder=embedder, wait=False)


def open_team_service(config: Config, url: str, log: Any, timeouts: Any = None) -> Any:
    """The team server's service over the team database at `url`, with the configured embedder
    (loading in the background; until it is ready, or without one, memories are stored
    unembedded and found by full text) and its database `timeouts` (store/team/connection.py:
    Timeouts; None: the defaults). Returns (TeamService, EmbeddingService)."""
    from reos_memory.errors import EmbedderUnavailable
    from reos_memory.team.memories import vector_text
    from reos_memory.team.team_service import TeamService

    factory = _embedder_factory(config)
    embeddings = EmbeddingService(config.embedder, factory, log)
    embeddings.start()

    def embed(text: str) -> str | None:
        try:
            row = embeddings.embed([text])[0]
        except EmbedderUnavailable:
            return None
        if len(row) != 384:  # the team schema's vector(384): all-MiniLM-L6-v2
            log.warning("team_embedder_dimensions", dimensions=len(row), needed=384)
            return None
        return vector_text(row)

    svc = TeamService(url, embed=embed, policy_file=config.policy_file or None, timeouts=timeouts)
    return svc, embeddings
