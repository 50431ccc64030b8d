"""`Squirrel`, the typed facade every interface calls (JSON-RPC, MCP, the hooks, `sqrl`): each
method takes its request Struct from `api.py` and returns its result Struct."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import apsw
import msgspec

from reos_memory.errors import Conflict, InvalidInput, NotFound
from reos_memory.models import (
    Memory,
    decode_cursor,
    iso,
    new_id,
    now_iso,
    page,
)
from reos_memory.squirrel import activity, api
from reos_memory.squirrel.memory import local_context as ctxmod
from reos_memory.squirrel.memory import ranking
from reos_memory.squirrel.memory.policy import Policy, load_policy
from reos_memory.squirrel.projects import (
    Project,
    owner_of,
    project_for_root,
    relative_path,
    resolve_project,
    safe_session_id,
)
from reos_memory.squirrel.sync import writes
from reos_memory.squirrel.writer.schema import WriterOp
from reos_memory.store import Database
from reos_memory.store import contexts as context_sql
from reos_memory.store import episodes as episode_sql
from reos_memory.store import memories as memory_sql
from reos_memory.store import projects as project_sql
from reos_memory.store import sessions as session_sql
from reos_memory.store import team_cache as team_cache_sql
from reos_memory.store import transcripts as transcript_sql
from reos_memory.store import writer_calls as call_sql

if TYPE_CHECKING:
    from reos_memory.squirrel.ingest import episodes
    from reos_memory.squirrel.ingest import ingest as tin
    from reos_memory.squirrel.ingest.ingest import IngestDeps
    from reos_memory.squirrel.ingest.watch import Watcher
    from reos_memory.squirrel.memory.commit import Vectors
    from reos_memory.squirrel.sync.sync import TeamSync
    from reos_memory.squirrel.writer.runner import Helper, Runner

LIVE = ("provisional", "active")


@dataclass
class Settings:
    """Squirrel's part of the configuration (the README lists each as a setting)."""

    writer: str = "auto"  # auto | rules | llm | claude-code | codex
    owner_id: str = ""
    policy_file: str = ""
    dedup_threshold: float = 0.92
    max_episode_events: int = 400
    writer_min_tool_calls: int = 12
    writer_max_input_tokens: int = 6000
    writer_max_output_tokens: int = 1200
    writer_daily_token_budget: int = 1_000_000
    writer_max_concurrent_calls: int = 2
    max_events_per_ingest: int = 5000
    llm_call_budget_s: float = 120.0  # timeout x attempts + backoff of one writer call
    idle_seconds: float = 1800.0  # a session whose log is idle this long has ended
    log_retention_days: int = 90  # context requests, writer calls, silent sessions
    team_server_url: str = ""  # a team server (its sync is given to Squirrel when a key is set)
    team_api_key_set: bool = False


class Squirrel:
    """The memory of a coding assistant over one database, embedder and vector machinery."""

    def __init__(
        self,
        db: Database,
        vectors: Vectors | None,
        settings: Settings,
        llm: Callable[[], Any] | None = None,
        log: Any = None,
        team: TeamSync | None = None,
    ) -> None:
        self.db = db
        self.team = team  # the team server's cache and outbox (None: no server or no key)
        self.vectors = vectors
        self.settings = settings
        self._llm = llm
        self.log = log
        self._pruned_at: float | None = None  # monotonic time of this process's last pruning
        # where and how episodes are learned: inline, background threads, claims, budget
        self._writer: Runner | None = None
        self._writer_lock = threading.Lock()

    @property
    def writer(self) -> Runner:
        """Where and how episodes are learned (inline, background threads, claims, budget);
        built on first use, so a process that only reads never loads the writer's rules."""
        with self._writer_lock:
            if self._writer is None:
                from reos_memory.squirrel.writer.runner import Runner

                self._writer = Runner(
                    self.db,
                    self.vectors,
                    self.settings,
                    self._llm,
                    self.log,
                    self.project_policy,
                    self.prune_logs,
                    self._episode_sharer(),
                )
            return self._writer

    def _episode_sharer(self) -> Callable[[str], Any] | None:
        """What queues a cut episode for the team's Memory Writer: only with a team server and
        key and `team_share_episodes` on (the user's choice: it sends their sessions away)."""
        team = self.team
        if team is None or not team.settings.share_episodes:
            return None
        from reos_memory.squirrel.sync import episodes as shared

        return lambda episode_id: shared.share(team, self.db, episode_id)

    # -- who and where ----------------------------------------------------------------------

    def owner(self, owner_type: str | None, owner_id: str | None) -> tuple[str, str]:
        return owner_of(owner_type, owner_id, self.settings.owner_id)

    def project(self, project_id: str | None, project_root: str | None) -> Project:
        """The project of a request; project ids that turn out to be one repository are merged
        on the way (squirrel/projects.py)."""
        p = resolve_project(
            self.db,
            project_id,
            project_root,
            on_merge=lambda m: self.log.info("project_merged", **m),
        )
        assert p is not None
        return p

    def named_project(self, project_id: str | None, project_root: str | None) -> Project | None:
        """The project a caller named by id or root, None when it named none (the project of a
        log's sessions that name no directory, `squirrel/ingest_transcript`, `sqrl ingest`)."""
        if project_id is None and project_root is None:
            return None
        return self.project(project_id, project_root)

    def policy(self, project_root: str | None = None) -> Policy:
        return load_policy(self.settings.policy_file or None, project_root)

    def project_policy(self, project_id: str | None) -> Policy:
        """The policy in force for a project known by id (its root's file included)."""
        if project_id is None:
            return self.policy()
        return self.policy(self.db.read(lambda c: project_sql.project_root(c, project_id)))

    @property
    def ingest_deps(self) -> IngestDeps:
        """What reading agents' logs needs of this service (`ingest/ingest.py` takes it, never
        the facade)."""
        from reos_memory.squirrel.ingest.ingest import IngestDeps

        return IngestDeps(
            db=self.db,
            settings=self.settings,
            writer=lambda: self.writer,
            owner=self.owner(None, None),
            policy=self.policy,
            project_policy=self.project_policy,
            project=self.project,
            limits=self.limits(),
        )

    # -- ingest and episodes ----------------------------------------------------------------

    def ingest(self, p: api.IngestParams, *, process: bool = True) -> api.IngestResult:
        """Take a session's events; cut, store and process the episodes they complete."""
        from reos_memory.squirrel.ingest import episodes

        events = p.events
        if len(events) > self.settings.max_events_per_ingest:
            raise InvalidInput(
                "events",
                f"at most {self.settings.max_events_per_ingest} events per call"
                " (setting max_events_per_ingest); send the rest in another call",
            )
        proj = self.project(p.project_id, p.project_root)
        owner = self.owner(p.owner_type, p.owner_id)
        pol = self.policy(proj.root)
        limits = self.limits()
        session_id = safe_session_id(p.session_id) or p.session_id
        session_end = p.session_end

        def tx(conn: apsw.Connection) -> episodes.IngestReport:
            return episodes.store_session(
                conn, proj, owner, session_id, events, session_end, pol, limits
            )

        self.prune_logs()
        report = self.db.write(tx)
        results = [self.writer.after_cut(ep, process) for ep in report.episodes]
        return api.IngestResult(
            project_id=proj.id,
            session_id=session_id,
            accepted=report.accepted,
            pending_events=report.pending_events,
            episodes=results,
        )

    def ingest_transcript(self, p: api.IngestTranscriptParams) -> api.TranscriptResult:
        """A Claude Code or Codex session log, from where it was last read."""
        from reos_memory.squirrel.ingest.ingest import Options, ingest_file

        fallback = self.named_project(p.project_id, p.project_root)
        opts = Options(p.agent, p.session_end, self.settings.idle_seconds, project=fallback)
        rep = ingest_file(self.ingest_deps, p.path, opts)
        return rep.public()

    def flush(self, p: api.FlushParams, *, process: bool = True) -> api.FlushResult:
        """Cut the open episode of a session (or of every session of the project) now; with
        `wait`, an LLM writer's call happens inside this call instead of in the background."""
        from reos_memory.squirrel.ingest import episodes

        proj = self.project(p.project_id, p.project_root)
        pol = self.policy(proj.root)
        limits = self.limits()
        session_id = safe_session_id(p.session_id)

        def tx(conn: apsw.Connection) -> list[api.EpisodeRun]:
            if session_id is not None:
                sess = session_sql.get_session(conn, session_id)
                if sess is not None and sess["project_id"] != proj.id:
                    raise InvalidInput(
                        "session_id", f"session belongs to project {sess['project_id']!r}"
                    )
                sessions = [session_id]
            else:
                sessions = session_sql.open_sessions(conn, proj.id)
            out = []
            for sid in sessions:
                ep = episodes.flush_session(conn, sid, limits, pol.regret)
                if ep is not None:
                    out.append(ep)
            return out

        cut = self.db.write(tx)
        return api.FlushResult(
            project_id=proj.id,
            episodes=[self.writer.after_cut(ep, process, p.wait) for ep in cut],
        )

    def ingest_paths(
        self,
        paths: Iterable[str],
        opts: tin.Options | None = None,
        progress: Callable[[int, int, tin.FileReport], None] | None = None,
        helper: Helper | None = None,
    ) -> list[tin.FileReport]:
        """Every session log under `paths` from its cursor (`sqrl ingest`); the episodes cut are
        learned while the next logs are read (`writer/runner.py`: `CatchUp`)."""
        from reos_memory.squirrel.ingest.ingest import ingest_paths

        return ingest_paths(self.ingest_deps, paths, opts, progress, helper)

    def watcher(
        self,
        roots: list[str],
        *,
        idle_seconds: float,
        progress: Callable[[int, int, tin.FileReport], None] | None = None,
        refresh: Callable[[], list[str]] | None = None,
    ) -> Watcher:
        """A watch over the agents' log directories (`sqrl watch`), run by its `run`; with
        `refresh`, the roots are looked for again every minute."""
        from reos_memory.squirrel.ingest.watch import Watcher

        return Watcher(self, roots, idle_seconds=idle_seconds, progress=progress, refresh=refresh)

    def end_session(self, session_id: str) -> list[Any]:
        """Cut a session's open episode as ended (the SessionEnd hook) and learn from it."""
        from reos_memory.squirrel.ingest.ingest import end_session

        return end_session(self.ingest_deps, session_id)

    def pending_events(self, session_ids: Iterable[str]) -> dict[str, int]:
        """Events of these sessions not yet cut into an episode, by session (none: left out)."""
        ids = sorted(set(session_ids))
        return self.db.read(lambda c: session_sql.pending_events_of(c, ids)) if ids else {}

    def limits(self) -> episodes.Limits:
        from reos_memory.squirrel.ingest import episodes

        s = self.settings
        return episodes.Limits(
            max_episode_events=s.max_episode_events, writer_min_tool_calls=s.writer_min_tool_calls
        )

    def close(self) -> None:
        """Stop the background writers; queued episodes stay pending for the next start."""
        with self._writer_lock:
            writer = self._writer
        if writer is not None:
            writer.close()
        if self.team is not None:
            self.team.close()

    def prune_logs(self, *, every_s: float = 3600.0) -> dict[str, int] | None:
        """Forget log rows older than `log_retention_days`; at most once per `every_s` per
        process (each call that writes a log row comes here, so the logs stay bounded)."""
        now = time.monotonic()
        if self._pruned_at is not None and now - self._pruned_at < every_s:
            return None
        self._pruned_at = now
        before = iso(datetime.now(UTC) - timedelta(days=self.settings.log_retention_days))
        gone = self.db.write(lambda c: call_sql.prune_logs(c, before))
        if self.log and any(gone.values()):
            self.log.info("logs_pruned", before=before, **gone)
        return gone

    def retry(self, p: api.EpisodeRetryParams) -> api.EpisodeRetryResult:
        """Run the writer again on one episode, or on every unprocessed one (of a project): now
        with the offline writer or `wait`, else queued for the background writer."""
        project_id = None
        if p.project_id is not None or p.project_root is not None:
            project_id = self.project(p.project_id, p.project_root).id
        episode_id, wait = p.episode_id, p.wait
        if episode_id is not None:
            if self.db.read(lambda c: episode_sql.get_episode(c, episode_id, False)) is None:
                raise NotFound("episode", episode_id, field="episode_id")
            ids = [episode_id]
        else:
            ids = self.db.read(lambda c: episode_sql.unprocessed_episodes(c, project_id, 1000))
        if wait or self.writer.writer_kind() == "rules":
            runs = [self.writer.process_episode(i) for i in ids]
        else:
            for i in ids:
                self.writer.enqueue(i, retry_failed=True)
            runs = [api.WriterRun(episode_id=i, outcome="queued") for i in ids]
        # published as plain objects (rpc_schema: `episodes` items are any object)
        return api.EpisodeRetryResult(episodes=[msgspec.to_builtins(r) for r in runs])

    # -- explicit writes --------------------------------------------------------------------

    def add_memory(self, p: api.MemoryAddParams) -> api.MemoryAddResult:
        """An explicit memory, through the same commit layer as the writer's (provisional); a
        team or org one goes to the team server when one is configured (`team`)."""
        from reos_memory.squirrel.memory.commit import CommitContext, commit

        if p.owner_type in ("team", "org") and self.team is not None:
            return self._team_add(p)

        op = WriterOp(
            op="ADD",
            scope=p.scope,
            kind=p.kind,
            tier=p.tier,
            polarity=p.polarity,
            key=p.key,
            text=p.text,
            ttl_days=p.ttl_days,
            confidence=p.confidence,
            path_prefix=p.path_prefix,
            owner_type=p.owner_type,
            owner_id=p.owner_id,
        )
        project_id, project_root = p.project_id, p.project_root
        owner_type, owner_id = p.owner_type, p.owner_id
        proj = None
        if op.scope != "global":
            proj = self.project(project_id, project_root)
        elif project_id is not None or project_root is not None:
            raise InvalidInput("scope", "a global memory belongs to no project: drop project_id")
        owner = self.owner(owner_type, owner_id)
        if proj is not None:
            self.db.write(
                lambda c: project_sql.touch_project(c, proj.id, proj.root, now_iso(), proj.identity)
            )
        mem_id = new_id("explicit")
        res = commit(
            self.db,
            self.vectors,
            [op],
            CommitContext(
                project_id=proj.id if proj else None,
                owner_type=owner[0],
                owner_id=owner[1],
                episode_id=mem_id,
                source="explicit_statement",
                protected_kinds=tuple(self.policy(proj.root if proj else None).protected_kinds),
            ),
            dedup_threshold=self.settings.dedup_threshold,
        ).results[0]
        if res["action"] == "rejected":
            raise InvalidInput("text", res["reason"])
        mid = res["memory_id"]
        deduplicated = res["action"] == "deduplicated"
        return api.MemoryAddResult(
            memory=self.db.read(lambda c: memory_sql.get_memory(c, mid)),
            deduplicated_into=mid if deduplicated else None,
            reason=res["reason"] if deduplicated else None,
            replaced=res.get("replaced") or None,
        )

    # -- reading memories -------------------------------------------------------------------

    def get_task_context(
        self, p: api.ContextParams, *, relevant_only: bool = False
    ) -> api.ContextResult:
        """The memories a task needs within a token budget; `relevant_only` (the prompt hook)
        returns nothing rather than memories that only rank by status."""
        return self._context(p, p.task, relevant_only)

    def session_start_context(self, p: api.ContextParams) -> api.ContextResult:
        """The project's most important memories, for a session that has no task yet (the
        SessionStart hook without a first prompt); `p.task` is not read."""
        return self._context(p, None, False)

    def _context(
        self, p: api.ContextParams, task: str | None, relevant_only: bool
    ) -> api.ContextResult:
        proj = self.project(p.project_id, p.project_root)
        self.prune_logs()
        # a stale cache is pulled first (bounded by team_context_timeout_s)
        team = self.team.context_info() if self.team is not None else api.ContextTeam(status="off")
        out = ctxmod.get_task_context(
            self.db,
            self.vectors,
            self.policy(proj.root),
            project_id=proj.id,
            task=task,
            owner=self.owner(p.owner_type, p.owner_id),
            path=relative_path(p.path, proj.root),
            session_id=safe_session_id(p.session_id),
            budget=p.context_budget_tokens,
            exclude_injected=p.exclude_injected,
            relevant_only=relevant_only,
            also=frozenset(self.team.owners()) if self.team is not None else frozenset(),
            record=not p.dry_run,
        )
        if team.status != "off":
            cached = self.db.read(lambda c: team_cache_sql.cached_texts(c, out.memory_ids))
            team.memory_ids = [i for i in out.memory_ids if i in cached]
        out.team = team
        return out

    def search(self, p: api.SquirrelSearchParams) -> api.SquirrelSearchResult:
        """Memories by meaning and keywords (all projects when none is given); counts nothing."""
        project_id, project_root, path = p.project_id, p.project_root, p.path
        owner_type, owner_id, kinds = p.owner_type, p.owner_id, p.kinds
        proj = (
            self.project(project_id, project_root)
            if project_id is not None or project_root is not None
            else None
        )
        owner = self.owner(owner_type, owner_id) if owner_type is not None or owner_id else None
        pol = self.policy(proj.root if proj else None)
        scope = ranking.Scope(
            project_id=proj.id if proj else None,
            owners=None if owner is None else frozenset({owner}),
            path=relative_path(path, proj.root if proj else None) if path else None,
            include_global=p.include_global,
            statuses=tuple(p.statuses),
            kinds=tuple(kinds) if kinds else None,
            protected=pol.protected_kinds,
            require_path=False,  # a search shows repo_path memories unless a path narrows it
        )
        return ctxmod.search(self.db, self.vectors, pol, query=p.query, scope=scope, limit=p.limit)

    def get_memory(self, memory_id: str) -> api.MemoryGetResult:
        """One memory with its evidence, metrics, the writer's UPDATE chain around it and the
        contexts it was given in."""

        def read(conn: apsw.Connection) -> api.MemoryGetResult:
            m = memory_sql.get_memory(conn, memory_id)
            if m is None:
                raise NotFound("memory", memory_id, field="memory_id")
            return api.MemoryGetResult(
                memory=m,
                evidence=memory_sql.evidence_of(conn, memory_id),
                metrics=memory_sql.metrics_of(conn, [memory_id]).get(memory_id),
                history=memory_sql.history_of(conn, memory_id),
                injections=memory_sql.injections_of(conn, memory_id),
            )

        return self.db.read(read)

    def list_memories(self, p: api.MemoryListParams) -> api.MemoryListResult:
        """Memories with their metrics, filtered, in `sort` order; paged by `cursor`."""
        project_id, project_root, include_global = p.project_id, p.project_root, p.include_global
        owner_type, owner_id, limit = p.owner_type, p.owner_id, p.limit
        pids: list[str | None] | None = None
        if project_id is not None or project_root is not None:
            pids = [self.project(project_id, project_root).id]
            if include_global:
                pids.append(None)
        after = decode_cursor(p.cursor, "squirrel/memories/list")
        owner = (owner_type or "user", owner_id or "") if owner_id or owner_type else None
        rows = self.db.read(
            lambda c: memory_sql.list_memories(
                c,
                project_ids=pids,
                statuses=p.statuses,
                kinds=p.kinds,
                tiers=p.tiers,
                scope=p.scope,
                owner=owner,
                key_prefix=p.key_prefix,
                text=p.text,
                sort=p.sort or "created",
                after=after,
                limit=limit + 1,
            )
        )
        mems, next_cursor = page(rows, limit)
        ids = [m.id for m in mems]
        metrics = self.db.read(lambda c: memory_sql.metrics_of(c, ids))
        return api.MemoryListResult(
            memories=mems, metrics=[metrics.get(i) for i in ids], next_cursor=next_cursor
        )

    # -- changing memories ------------------------------------------------------------------

    def update_memory(self, p: api.MemoryUpdateParams) -> api.MemoryResult:
        """Edit a memory in place; a new `text` is embedded again. `clear_ttl` / `clear_key`
        unset. A key names one live memory: a key held by another live memory is a conflict."""
        for clear, value in (("clear_key", p.key), ("clear_ttl", p.ttl_days)):
            if getattr(p, clear) and value is not None:
                raise InvalidInput(clear, f"cannot be true together with `{clear[6:]}`")
        changes: dict[str, Any] = {
            k: v
            for k in ("text", "kind", "tier", "key", "status", "confidence", "polarity")
            if (v := getattr(p, k)) is not None
        }
        if p.ttl_days is not None or p.clear_ttl:
            changes["ttl_days"] = None if p.clear_ttl else p.ttl_days
        if p.clear_key:
            changes["key"] = None
        if self._on_team_server(p.memory_id):
            return writes.update(self._team(), self.db, p)
        return self._change(p.memory_id, changes)

    def _change(self, memory_id: str, changes: dict[str, Any]) -> api.MemoryResult:
        """Edit a memory in place (text, kind, tier, key, confidence, ttl, polarity, status)."""
        from reos_memory.squirrel.redaction import redact_folded

        text = changes.get("text")
        if text is not None:
            text = redact_folded(text)
            if not text:  # as memories/add: a memory is never blank
                raise InvalidInput("text", "must hold more than whitespace")
        vec_blob = None
        model_id = None
        if text is not None and self.vectors is not None:
            emb, _r = self.vectors.usable_model()
            if emb is not None:
                import numpy as np

                vec = self.vectors.embed_texts([text], priority=0)[0]
                vec_blob = np.ascontiguousarray(vec, dtype="<f4").tobytes()
                model_id = emb.model_id

        def tx(conn: apsw.Connection) -> Memory:
            from reos_memory.store.vectors import recorded_model

            m = memory_sql.get_memory(conn, memory_id)
            if m is None:
                raise NotFound("memory", memory_id, field="memory_id")
            _check_key_free(conn, m, changes)
            fields = dict(changes)
            if "ttl_days" in fields:
                ttl = fields.pop("ttl_days")
                fields["expires_at"] = None if ttl is None else now_iso(ttl)
            if text is not None:
                fields["text"] = text
                ok = model_id is not None and recorded_model(conn) == model_id
                fields["embedding"] = vec_blob if ok else None
            memory_sql.update_memory(conn, memory_id, now_iso(), **fields)
            out = memory_sql.get_memory(conn, memory_id)
            assert out is not None
            return out

        return api.MemoryResult(memory=self.db.write(tx))

    def deprecate(self, memory_id: str) -> api.MemoryResult:
        """Mark a memory deprecated: kept for history, never returned by get_task_context."""
        if self._on_team_server(memory_id):
            return writes.deprecate(self._team(), self.db, memory_id)
        return self._change(memory_id, {"status": "deprecated"})

    def forget(self, memory_id: str) -> api.ForgetResult:
        """Erase a memory for good: the row, its vector, evidence, metrics and injections."""
        if self._on_team_server(memory_id):
            return writes.forget(self._team(), self.db, memory_id)

        def tx(conn: apsw.Connection) -> dict[str, int]:
            if memory_sql.get_memory(conn, memory_id) is None:
                raise NotFound("memory", memory_id, field="memory_id")
            return memory_sql.delete_memory(conn, memory_id)

        removed = self.db.write(tx)
        if self.vectors is not None:  # the saved index file still holds its vector
            from reos_memory.store.vectors import MEMORIES

            self.vectors.drop_saved_index(MEMORIES)
        return api.ForgetResult(forgotten=True, memory_id=memory_id, removed=removed)

    # -- the team server --------------------------------------------------------------------

    def _team(self) -> TeamSync:
        if self.team is None:
            raise InvalidInput("memory_id", f"a team memory: changing it {writes.NO_SERVER}")
        return self.team

    def _on_team_server(self, memory_id: str) -> bool:
        """Whether a memory is a cached team memory (changed on the server, not here)."""
        return writes.is_cached(self.db, memory_id)

    def _team_add(self, p: api.MemoryAddParams) -> api.MemoryAddResult:
        project_id = None
        if p.scope != "global":
            project_id = self.project(p.project_id, p.project_root).id
        elif p.project_id is not None or p.project_root is not None:
            raise InvalidInput("scope", "a global memory belongs to no project: drop project_id")
        return writes.add(self._team(), self.db, p, project_id)

    def share(self, p: api.ShareParams) -> api.ShareResult:
        """Propose a memory of one's own to a team (or the org) of the team server."""
        if self.team is None:
            raise InvalidInput("memory_id", f"sharing {writes.NO_SERVER}")
        return writes.share(self.team, self.db, p)

    def team_status(self) -> api.TeamStatusResult:
        """The team server, whether a key is set, the cursor, the last pull, the outbox."""
        if self.team is not None:
            return self.team.status()
        from reos_memory.llm.client import shown_url

        url = self.settings.team_server_url
        return api.TeamStatusResult(
            configured=bool(url), server=shown_url(url) if url else None,
            api_key="set" if self.settings.team_api_key_set else "not set",
            org_id=None, team_id=None, role=None, last_seq=0, last_pull_at=None,
            last_attempt_at=None, last_error=None, cached={}, outbox={}, refused=[], pending=[],
        )  # fmt: skip

    def team_sync(self, p: api.TeamSyncParams) -> api.TeamSyncResult:
        """Send the outbox and pull the change log now (`sqrl team sync`)."""
        if self.team is None:
            why = "no team server" if not self.settings.team_server_url else "no API key"
            return api.TeamSyncResult(
                status="off", error=f"{why} configured", sent=0, refused=0, pending=0,
                upserts=0, forgets=0, skipped=0, last_seq=0, complete=False,
            )  # fmt: skip
        rep = self.team.sync(p.timeout_s)
        st = self.team.status()
        return api.TeamSyncResult(
            status="offline" if rep.error else "ok", error=rep.error, sent=rep.sent,
            refused=rep.refused, pending=st.outbox.get("pending", 0), upserts=rep.upserts,
            forgets=rep.forgets, skipped=rep.skipped, last_seq=st.last_seq,
            complete=rep.complete, restarted=rep.restarted,
        )  # fmt: skip

    # -- episodes ---------------------------------------------------------------------------

    def list_episodes(self, p: api.EpisodeListParams) -> api.EpisodeListResult:
        """Episodes (stats, pre-filter decision, outcome) without their events; paged."""
        pid = (
            self.project(p.project_id, p.project_root).id
            if p.project_id is not None or p.project_root is not None
            else None
        )
        rows = self.db.read(
            lambda c: episode_sql.list_episodes(
                c,
                project_id=pid,
                session_id=p.session_id,
                outcome=p.outcome,
                after_rowid=decode_cursor(p.cursor, "squirrel/episodes/list"),
                limit=p.limit + 1,
            )
        )
        eps, next_cursor = page(rows, p.limit)
        return api.EpisodeListResult(episodes=eps, next_cursor=next_cursor)

    def get_episode(self, episode_id: str) -> api.EpisodeGetResult:
        """One episode with its compressed events and the ops the writer committed."""
        ep = self.db.read(lambda c: episode_sql.get_episode(c, episode_id, True))
        if ep is None:
            raise NotFound("episode", episode_id, field="episode_id")
        return api.EpisodeGetResult(episode=ep)

    # -- feedback, CR-Memory, status --------------------------------------------------------

    def feedback(self, p: api.FeedbackParams) -> api.FeedbackResult:
        """How a task that received a context went; counts once per context."""
        from reos_memory.squirrel.memory import feedback

        context_id = p.context_id
        outcome = feedback.outcome_of(p)

        def tx(conn: apsw.Connection) -> api.FeedbackResult:
            ctx = context_sql.get_context(conn, context_id)
            if ctx is None:
                raise NotFound("context", context_id, field="context_id")
            root = project_sql.project_root(conn, ctx["project_id"]) if ctx["project_id"] else None
            pol = self.policy(root)
            return feedback.apply(conn, context_id, outcome, pol.regret, now_iso(), "explicit")

        return self.db.write(tx)

    def cr_memory(
        self, p: api.CrMemoryParams, cancelled: Callable[[], bool] | None = None
    ) -> api.CrMemoryResult:
        """Promote useful memories and deprecate useless ones by the policy; `dry_run` changes
        nothing."""
        from reos_memory.squirrel.memory import cr_memory

        project_id, project_root = p.project_id, p.project_root
        proj = (
            self.project(project_id, project_root)
            if project_id is not None or project_root is not None
            else None
        )
        return cr_memory.run(
            self.db,
            project_id=proj.id if proj else None,
            policy_for=self.project_policy,
            dry_run=p.dry_run,
            cancelled=cancelled,
        )

    def activity(self, p: api.ActivityParams) -> api.ActivityResult:
        """Day by day over the last `days` (UTC): memories learned by kind, contexts given and
        memories injected (of a project, or all), Memory Writer calls and tokens."""
        pid = (
            self.project(p.project_id, p.project_root).id
            if p.project_id is not None or p.project_root is not None
            else None
        )
        days = activity.day_range(p.days)
        return activity.assemble(
            pid, days, self.db.read(lambda c: call_sql.activity(c, days[0], pid))
        )

    def policy_info(self, p: api.PolicyParams) -> api.PolicyResult:
        """The effective memory policy (default < user file < project file) and its sources."""
        root = project_for_root(p.project_root).root if p.project_root is not None else None
        pol = self.policy(root)
        return api.PolicyResult(policy=pol.raw, sources=pol.sources)

    def status(self) -> api.StatusResult:
        """Memories by status, kind and tier; episodes by outcome; writer calls and tokens."""

        try:
            writer = self.writer.writer_kind()
        except InvalidInput as exc:
            writer = f"misconfigured: {exc.message}"
        writer_config = self.writer.writer_config()
        owner_id = self.owner(None, None)[1]

        def read(conn: apsw.Connection) -> api.StatusResult:
            return api.StatusResult(
                memories={
                    "by_status": memory_sql.count_by(conn, "status"),
                    "by_kind": memory_sql.count_by(conn, "kind"),
                    "by_tier": memory_sql.count_by(conn, "tier"),
                },
                episodes=episode_sql.count_episodes(conn),
                pending_events=session_sql.pending_event_count(conn),
                open_sessions=len(session_sql.open_sessions(conn, None)),
                projects=len(project_sql.project_ids(conn)),
                writer_calls_by_day=call_sql.calls_by_day(conn, 7),
                tokens_today=call_sql.tokens_today(conn, now_iso()[:10]),
                transcripts=transcript_sql.summary(conn),
                writer=writer,
                writer_daily_token_budget=self.settings.writer_daily_token_budget,
                writer_config=writer_config,
                owner_id=owner_id,
            )

        return self.db.read(read)


def _check_key_free(conn: apsw.Connection, m: Memory, changes: dict[str, Any]) -> None:
    """A key names one live memory (of a project, scope and owner): an edit that would make a
    second live holder, by a new key or by reviving a deprecated memory, is a Conflict."""
    key = changes.get("key", m.key)
    if key is None or changes.get("status", m.status) == "deprecated":
        return
    if "key" not in changes and ("status" not in changes or m.status != "deprecated"):
        return
    holders = memory_sql.live_by_key(conn, key, m.project_id, m.scope, m.owner_type, m.owner_id)
    other = next((h for h in holders if h.id != m.id), None)
    if other is not None:
        field = "key" if "key" in changes else "status"
        raise Conflict(
            f"key {key!r} is held by the live memory {other.id}; deprecate it or clear its key"
            " first",
            field=f"$.{field}",
            existing_id=other.id,
        )
