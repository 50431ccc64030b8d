"""The one place that reads configuration and wires the service together."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from reos_memory import __version__
from reos_memory.config import Config
from reos_memory.embeddings.base import Embedder
from reos_memory.embeddings.service import EmbeddingService
from reos_memory.index.vectors import Indexer
from reos_memory.logs import setup_logging
from reos_memory.store import Database, backup_to
from reos_memory.store.migrations import migrate, pending
from reos_memory.store.vectors import recorded_model

if TYPE_CHECKING:
    from reos_memory.llm import LLMClient
    from reos_memory.squirrel.service import Squirrel


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

    def embedder_status(self) -> dict[str, Any]:
        status = self.embeddings.status()
        status["database_model_id"] = self.db.read(recorded_model)
        status["vector_search"] = self.config.vector_search
        status["vector_index"] = self.indexer.index_status()
        return status

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
    from reos_memory.squirrel.service import Settings, Squirrel

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
        idle_seconds=c.session_idle_minutes * 60.0,
        llm_call_budget_s=(
            c.writer_cli_timeout_s + 30  # one run, and the probe of its options
            if c.writer in ("claude-code", "codex")
            else c.llm_timeout_s * (c.llm_max_retries + 1) + 10 * c.llm_max_retries
        ),
    )
    return Squirrel(db, indexer, settings, llm, log)


def export_graph(
    config: Config,
    fmt: str,
    block_id: str | None,
    depth: int,
    act_id: str | None,
    max_nodes: int,
    out: str | None,
) -> int:
    """Write a picture of the graph (or of a block's neighbourhood) to a file or stdout."""
    from reos_memory.errors import ReosError
    from reos_memory.graph import export

    if _missing(config):
        return 1
    db = Database(config.db)
    try:  # a reader never migrates (nor backs up) the database it reads
        _refuse_older(db, "export")
        pic = export.collect(db, block_id=block_id, depth=depth, act_id=act_id, max_nodes=max_nodes)
    except ReosError as exc:
        sys.stderr.write(f"reos-memory: {exc.message}\n")
        return 1
    finally:
        db.close()
    render = {"dot": export.to_dot, "mermaid": export.to_mermaid, "html": export.to_html}[fmt]
    text = render(pic)
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
        sys.stderr.write(f"wrote {out}: {len(pic.nodes)} blocks, {len(pic.edges)} relationships\n")
    else:
        sys.stdout.write(text)
    return 0


def model_status(config: Config) -> int:
    """Print where the model weights and the ONNX export are and whether the export is verified."""
    import json
    from pathlib import Path

    from reos_memory.embeddings.base import EmbedderUnavailableError
    from reos_memory.embeddings.locate import locate_model
    from reos_memory.embeddings.prepare import prepared_ok

    target = Path(config.model_dir)
    try:
        src: Path | None = locate_model()
        detail = None
    except EmbedderUnavailableError as exc:
        src, detail = None, str(exc)
    manifest = target / "manifest.json"
    info = {
        "source": str(src) if src else None,
        "source_problem": detail,
        "onnx_dir": str(target),
        "prepared": bool(src) and prepared_ok(target, src),  # type: ignore[arg-type]
        "manifest": json.loads(manifest.read_text()) if manifest.is_file() else None,
    }
    sys.stdout.write(json.dumps(info, indent=2) + "\n")
    return 0 if info["prepared"] else 1


def model_prepare(config: Config, *, sts: str | None = None, force: bool = False) -> int:
    """Export the model to ONNX in config.model_dir and verify it (no-op when already done)."""
    from pathlib import Path

    from reos_memory.embeddings.base import EmbedderUnavailableError
    from reos_memory.embeddings.locate import locate_model
    from reos_memory.embeddings.prepare import prepare

    try:
        src = locate_model()
        prepare(
            src,
            Path(config.model_dir),
            sts_path=Path(sts) if sts else None,
            force=force,
            log=lambda m: print(m, file=sys.stderr),
        )
    except (EmbedderUnavailableError, RuntimeError, ImportError) as exc:
        sys.stderr.write(f"reos-memory: {exc}\n")
        return 1
    return 0


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


def serve(config: Config) -> int:
    """Serve JSON-RPC on stdin/stdout until end of input, SIGTERM or the parent's death."""
    from reos_memory.interfaces.jsonrpc.framing import FrameReader, FrameWriter
    from reos_memory.interfaces.jsonrpc.methods import load_all
    from reos_memory.interfaces.jsonrpc.server import Server, StopServing

    log = setup_logging(config.log_level)
    # The protocol keeps the real stdout; anything else printed (by us or a library) goes to stderr.
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    stdin = sys.stdin.buffer
    interactive = stdin.isatty()

    app = App(config, log)
    registry = load_all()  # before the model thread starts: both would wait on the GIL
    app.start()
    reader = FrameReader(stdin, config.max_message_bytes)
    server = Server(
        app,
        registry,
        reader,
        FrameWriter(proto_fd, reader),
        log,
        read_threads=config.read_threads,
        heavy_threads=config.heavy_threads,
        max_batch_items=config.max_batch_items,
        max_result_bytes=config.max_result_bytes,
    )

    def on_signal(signum: int, frame: Any) -> None:
        log.info("signal", signal=signal.Signals(signum).name)
        server.stopping.set()
        if server.reading:
            raise StopServing()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, on_signal)
    if config.parent_watch_s > 0:
        _watch_parent(config.parent_watch_s, log)

    if interactive:
        sys.stderr.write(
            f"reos-memory {__version__}: JSON-RPC 2.0 on stdin/stdout, database {config.db}\n"
            'Type one request per line, e.g. {"jsonrpc":"2.0","id":1,"method":"memory/stats"}'
            " - Ctrl-D quits.\n"
        )
        sys.stderr.flush()
    log.info("started", version=__version__, pid=os.getpid(), database=config.db)
    try:
        server.serve()
    finally:
        app.close()
        log.info("stopped", requests=server.requests_served)
    return 0


def _watch_parent(interval: float, log: Any) -> None:
    """Stop when the process that started us is gone, even if it left our stdin open."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                log.info("parent_gone", parent=parent)
                os.kill(os.getpid(), signal.SIGTERM)
                return

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


SQRL_NEEDS_MODEL = ("context", "add", "flush", "search")


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


def _missing(config: Config) -> bool:
    """True (and said on stderr) when the database a command would read does not exist."""
    if os.path.exists(config.db):
        return False
    sys.stderr.write(f"reos-memory: no database at {config.db}\n")
    return True


def _refuse_older(db: Database, verb: str) -> None:
    """A command that only reads never migrates (nor backs up) the database it reads."""
    from reos_memory.errors import SchemaError

    if pending(db):
        raise SchemaError(
            f"{db.path} is an older version of the database; start the service once"
            f" to upgrade it ({verb} only reads)"
        )


def backup_database(config: Config, target: str) -> int:
    """`reos-memory backup PATH`: a consistent online copy of the database (servers may keep
    running), written to a new file readable by its owner only."""
    if _missing(config):
        return 1
    if os.path.exists(target):
        sys.stderr.write(f"reos-memory: {target} exists; a backup never overwrites a file\n")
        return 1
    from reos_memory.errors import ReosError

    db = Database(config.db, busy_timeout_ms=config.busy_timeout_ms, lock_wait_s=config.lock_wait_s)
    try:
        t0 = time.monotonic()
        pages = backup_to(db, target)
    except (OSError, ReosError) as exc:
        sys.stderr.write(f"reos-memory: backup failed: {exc}\n")
        return 1
    finally:
        db.close()
    size = os.path.getsize(target)
    sys.stderr.write(
        f"backed up {config.db} to {target}: {pages} pages, {size} bytes"
        f" in {time.monotonic() - t0:.1f} s\n"
    )
    return 0


def dump_database(config: Config, target: str) -> int:
    """`reos-memory dump [PATH|-]`: the user's data as JSON Lines, read from one snapshot (servers
    may keep running), to a new file readable by its owner only, or to stdout. Vectors are left
    out: `load` recomputes them."""
    import apsw

    from reos_memory.errors import ReosError
    from reos_memory.store import dump as dump_sql
    from reos_memory.store.connection import create_private

    if _missing(config):
        return 1
    to_file = target != "-"
    if to_file and os.path.lexists(target):
        sys.stderr.write(f"reos-memory: {target} exists; a dump never overwrites a file\n")
        return 1
    db = Database(config.db, busy_timeout_ms=config.busy_timeout_ms, lock_wait_s=config.lock_wait_s)
    out: Any = None
    created = False
    try:
        _refuse_older(db, "dump")
        if to_file:
            created = create_private(target)
            if not created:
                raise FileExistsError(f"{target} exists; a dump never overwrites a file")
            out = open(target, "wb")  # noqa: SIM115 - closed below, removed on failure
        stream = out if out is not None else sys.stdout.buffer
        counts = dump_sql.dump(db, stream.write, __version__)
        stream.flush()
        if out is not None:
            os.fsync(out.fileno())
            out.close()
    except (OSError, ReosError, apsw.Error) as exc:
        if out is not None:
            out.close()
        if created:
            os.unlink(target)  # never leave half a dump that looks like one
        sys.stderr.write(f"reos-memory: dump failed: {getattr(exc, 'message', exc)}\n")
        return 1
    finally:
        db.close()
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "nothing"
    sys.stderr.write(f"dumped {config.db} to {target if to_file else 'stdout'}: {summary}\n")
    return 0


def load_dump(config: Config, source: str) -> int:
    """`reos-memory load PATH|-`: a dump into an empty or new database, in one transaction (all
    of it or nothing), ids, timestamps and versions as they were; then the vectors of blocks and
    memories are computed with the configured embedder."""
    import contextlib

    import apsw

    from reos_memory.errors import ReosError
    from reos_memory.store import dump as dump_sql
    from reos_memory.store.migrations import load_migrations

    if source != "-" and not os.path.isfile(source):
        sys.stderr.write(f"reos-memory: no dump at {source}\n")
        return 1
    existed = os.path.exists(config.db)
    db = Database(config.db, busy_timeout_ms=config.busy_timeout_ms, lock_wait_s=config.lock_wait_s)
    loaded = None
    try:
        full = db.read(dump_sql.tables_with_rows) if existed else {}
        if full:  # refused before anything (a migration included) is written
            held = ", ".join(f"{n}: {c}" for n, c in full.items())
            raise dump_sql.DumpError(
                f"{config.db} holds data ({held}); load only into an empty or new database"
            )
        migrate(db)
        latest = max(m.version for m in load_migrations())
        with contextlib.ExitStack() as stack:
            f = sys.stdin.buffer if source == "-" else stack.enter_context(open(source, "rb"))
            loaded = dump_sql.load(db, f, latest)
    except (OSError, ReosError, apsw.Error) as exc:
        sys.stderr.write(
            f"reos-memory: load failed, nothing was stored: {getattr(exc, 'message', exc)}\n"
        )
        return 1
    finally:
        db.close()
        if loaded is None and not existed:  # leave no database behind that we made
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(config.db + suffix)
    assert loaded is not None
    summary = ", ".join(f"{n} {k}" for k, n in loaded.counts.items()) or "nothing"
    sys.stderr.write(f"loaded {source} into {config.db}: {summary}\n")
    return _index_loaded(config, loaded.header.get("embedding_model"))


def _index_loaded(config: Config, dumped_model: str | None) -> int:
    """Compute the vectors of a freshly loaded database with the configured embedder, through
    the catch-up indexing every server runs at start."""
    from reos_memory.errors import ReosError

    try:
        app = open_app(config, needs_model=True)
    except ReosError as exc:
        sys.stderr.write(f"reos-memory: indexing failed: {exc.message}\n")
        return 1
    try:
        emb = app.embeddings.wait_ready(0)
        if emb is None:
            sys.stderr.write(
                f"reos-memory: no vectors computed ({app.embeddings.detail or app.config.embedder});"
                " a server started with an embedder computes them\n"
            )
            return 0
        if dumped_model and dumped_model != emb.model_id:
            sys.stderr.write(
                f"the dump's vectors came from {dumped_model}; computing them with the configured"
                f" {emb.model_id}\n"
            )
        done = app.indexer.catch_up(app.log, lambda: False)
        left = app.indexer.pending_count()
    finally:
        app.close()
    sys.stderr.write(
        f"indexed {done} blocks and memories with {emb.model_id}"
        + (f"; {left} left for a server to index\n" if left else "\n")
    )
    return 0


def migrate_database(config: Config) -> list[Any]:
    """`reos-memory migrate`: apply the pending migrations and close; what was applied."""
    setup_logging(config.log_level)
    db = Database(config.db)
    try:
        return list(migrate(db) or [])
    finally:
        db.close()


def run_sqrl(config: Config, args: Any) -> int:
    """Run one `sqrl` command on the database directly (no server needed)."""
    import msgspec

    from reos_memory.cli import report
    from reos_memory.errors import ReosError

    try:
        app = open_app(
            config,
            needs_model=args.command in SQRL_NEEDS_MODEL,
            embedder=getattr(args, "embedder", None),
        )
    except ReosError as exc:
        sys.stderr.write(f"sqrl: {exc.message}\n")
        return 1
    try:
        from reos_memory.squirrel import api

        sq = app.squirrel
        root = None if args.project_id else (args.project_root or os.getcwd())
        where = {"project_id": args.project_id, "project_root": root}
        anywhere = {"project_id": None, "project_root": None}
        cmd = args.command
        out: Any
        if cmd == "flush":
            out = sq.flush(api.FlushParams(**where, session_id=args.session, wait=True))
            text = report.episodes(out)
        elif cmd == "context":
            out = sq.get_task_context(
                api.ContextParams(
                    **where,
                    task=args.task,
                    path=args.path,
                    session_id=args.session,
                    context_budget_tokens=args.budget,
                )
            )
            text = report.context(out)
        elif cmd == "add":
            from reos_memory.squirrel.writer.schema import WriterOp

            try:
                op = msgspec.convert(
                    {
                        "op": "ADD",
                        "scope": args.scope,
                        "kind": args.kind,
                        "tier": args.tier,
                        "polarity": -1 if args.avoid else 1,
                        "key": args.key,
                        "text": " ".join(args.text),
                        "ttl_days": args.ttl_days,
                        "path_prefix": args.path_prefix,
                    },
                    WriterOp,
                )
            except msgspec.ValidationError as exc:
                msg, _, at = str(exc).rpartition(" - at `$.")
                option = "--" + at.rstrip("`").replace("_", "-")
                raise ReosError(f"{option}: {msg or exc}") from None
            if args.scope == "global":
                where = anywhere
            out = sq.add_memory(
                api.MemoryAddParams(
                    **where,
                    scope=op.scope,
                    kind=args.kind,
                    tier=op.tier,
                    polarity=op.polarity,
                    key=op.key,
                    text=op.text or "",
                    ttl_days=op.ttl_days,
                    path_prefix=op.path_prefix,
                )
            )
            m = out.memory
            text = (
                f"deduplicated into {out.deduplicated_into}: {m.text}\n"
                if out.deduplicated_into
                else f"added {m.id} ({m.kind}, {m.status}): {m.text}\n"
            )
        elif cmd == "memories" and args.memory_id:
            out = sq.get_memory(args.memory_id)
            text = report.memory(out)
        elif cmd == "memories":
            statuses = args.status or ["provisional", "active"]
            scope_args = anywhere if args.all_projects else where
            out = sq.list_memories(
                api.MemoryListParams(
                    **scope_args, statuses=statuses, kinds=args.kind, limit=args.limit
                )
            )
            text = report.memories(out.memories, out.metrics)
        elif cmd == "search":
            query = " ".join(args.query)
            out = sq.search(api.SquirrelSearchParams(query=query, **where, limit=args.limit))
            text = report.search(out)
        elif cmd == "forget":
            out = sq.forget(args.memory_id)
            text = f"forgot {args.memory_id}\n"
        elif cmd == "cr-memory":
            scope_args = anywhere if args.all_projects else where
            out = sq.cr_memory(api.CrMemoryParams(**scope_args, dry_run=args.dry_run))
            text = report.cr_memory(out)
        elif cmd == "status":
            out = sq.status()
            text = report.status(out)
        else:  # pragma: no cover - argparse only offers the commands above
            raise AssertionError(cmd)
    except ReosError as exc:
        sys.stderr.write(f"sqrl: {exc.message}\n")
        return 1
    finally:
        app.close()
    if args.json:
        sys.stdout.write(msgspec.json.encode(out).decode() + "\n")
    else:
        sys.stdout.write(text)
    return 0
