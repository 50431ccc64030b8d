"""Squirrel's operations, shared by the JSON-RPC handlers and the `sqrl` command line."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import apsw
import msgspec

from reos_memory.errors import Conflict, InvalidInput, NotFound
from reos_memory.models import (
    EventIn,
    Memory,
    decode_cursor,
    iso,
    new_id,
    now_iso,
    page,
)
from reos_memory.squirrel.ingest import episodes
from reos_memory.squirrel.memory import context as ctxmod
from reos_memory.squirrel.memory import cr_memory, feedback
from reos_memory.squirrel.memory.commit import CommitContext, Vectors, commit
from reos_memory.squirrel.memory.policy import Policy, default_text, load_policy
from reos_memory.squirrel.projects import (
    Project,
    owner_of,
    project_for_root,
    relative_path,
    resolve_project,
    safe_session_id,
)
from reos_memory.squirrel.tokens import count_tokens
from reos_memory.squirrel.writer import llm as llm_writer
from reos_memory.squirrel.writer import rules
from reos_memory.squirrel.writer.schema import WriterOp, WriterOutput
from reos_memory.store import Database
from reos_memory.store import memories as msql
from reos_memory.store import squirrel as ssql
from reos_memory.store import transcripts as tsql

LIVE = ("provisional", "active")
STALE_CLAIM = timedelta(minutes=15)  # a claim older than this belonged to a process that died
# Who holds a claim: host, pid namespace, pid and the process's start time. A claim of a
# process of this host and namespace that is gone (or whose pid now names a younger process) is
# free at once; any other claim waits for STALE_CLAIM.
_HOST = socket.gethostname().replace(" ", "_").replace("/", "_")


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "-"


def _stat(pid: int) -> list[bytes]:
    """The fields of /proc/<pid>/stat after the command name (empty when unreadable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _started(pid: int) -> str:
    """The process's start time in clock ticks since boot ("-" when unknown)."""
    return _start_time(_stat(pid))


def _start_time(fields: list[bytes]) -> str:
    return fields[19].decode() if len(fields) > 19 else "-"


def claimant() -> str:
    """This process, as a claim names it (computed each time: a forked child is another)."""
    pid = os.getpid()
    return f"{_HOST}/{_pid_namespace()}/{pid}/{_started(pid)}"


def _claimant_died(claim: str) -> bool:
    """True when `claim` was taken by a process of this host and pid namespace that no longer
    runs; False when it may run, or cannot be told (another host or namespace, older claims)."""
    parts = claim.rsplit(" ", 1)[-1].split("/")
    if len(parts) != 4 or not parts[2].isdigit():
        return False
    host, ns, pid, started = parts[0], parts[1], int(parts[2]), parts[3]
    if host != _HOST or ns == "-" or ns != _pid_namespace() or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive under another user
        return False
    fields = _stat(pid)
    if fields[:1] == [b"Z"]:
        return True  # exited, not yet reaped by its parent
    now = _start_time(fields)
    return started != "-" and now != "-" and now != started  # the pid was reused


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


class Squirrel:
    """The memory of a coding assistant over one database, embedder and vector machinery."""

    def __init__(
        self,
        db: Database,
        vectors: Vectors | None,
        settings: Settings,
        llm: Callable[[], Any] | None = None,
        log: Any = None,
    ) -> None:
        self.db = db
        self.vectors = vectors
        self.settings = settings
        self._llm = llm
        self.log = log
        self._llm_slots = threading.BoundedSemaphore(max(1, settings.writer_max_concurrent_calls))
        self._queue_lock = threading.Lock()
        self._queue: Any = None
        self._queued: set[str] = set()
        # episodes asked for again by name (episodes/retry): the one time a background writer
        # runs a failed episode; the ones it meets by itself stay failed (no runaway calls)
        self._retrying: set[str] = set()
        self._workers: list[threading.Thread] = []
        self._closing = threading.Event()
        # a claim older than the longest a writer call can take belonged to a process that died
        self._stale_after = max(STALE_CLAIM, timedelta(seconds=2 * settings.llm_call_budget_s + 60))
        self._pruned_at: float | None = None  # monotonic time of this process's last pruning

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

    def policy(self, project_root: str | None = None) -> Policy:
        return load_policy(self.settings.policy_file or None, project_root)

    def project_policy(self, project_id: str | None) -> Policy:
        """The policy in force for a project known by id (its root's file included)."""
        if project_id is None:
            return self.policy()
        return self.policy(self.db.read(lambda c: ssql.project_root(c, project_id)))

    def writer_kind(self) -> str:
        """'rules' or the LLM provider's name, as configured."""
        if self.settings.writer == "rules":
            return "rules"
        client = self._llm() if self._llm else None
        if client is None:
            if self.settings.writer == "llm":
                raise InvalidInput("writer", "writer=llm needs llm_provider and llm_model")
            return "rules"
        return str(client.settings.provider)

    def writer_config(self) -> dict[str, Any]:
        """How the Memory Writer is set up: provider, model, endpoint and whether the key's
        variable is set (never the key)."""
        client = None
        if self.settings.writer != "rules" and self._llm is not None:
            try:
                client = self._llm()
            except Exception as exc:  # a misconfigured provider is shown, not raised
                return {"writer": self.settings.writer, "problem": str(exc)}
        if client is None:
            return {"writer": self.settings.writer, "provider": "rules (offline)"}
        if hasattr(client, "describe"):  # the agent's CLI: its executable, found or not
            return {"writer": self.settings.writer, **client.describe()}
        st = client.settings
        return {
            "writer": self.settings.writer,
            "provider": st.provider,
            "model": st.model,
            "base_url": client.shown_url,  # never a password or a key in a query
            "api_key_env": st.api_key_env or None,
            "api_key_set": bool(st.api_key_env and os.environ.get(st.api_key_env)),
        }

    # -- ingest and episodes ----------------------------------------------------------------

    def ingest(
        self,
        *,
        project_id: str | None,
        project_root: str | None,
        session_id: str,
        events: Sequence[EventIn],
        owner_type: str | None = None,
        owner_id: str | None = None,
        session_end: bool = False,
        process: bool = True,
    ) -> dict[str, Any]:
        """Take a session's events; cut, store and process the episodes they complete."""
        if len(events) > self.settings.max_events_per_ingest:
            raise InvalidInput(
                "events",
                f"at most {self.settings.max_events_per_ingest} events per call"
                " (setting max_events_per_ingest); send the rest in another call",
            )
        proj = self.project(project_id, project_root)
        owner = self.owner(owner_type, owner_id)
        pol = self.policy(proj.root)
        limits = self.limits()
        session_id = safe_session_id(session_id) or session_id

        def tx(conn: apsw.Connection) -> episodes.IngestReport:
            return self.ingest_in(conn, proj, owner, session_id, events, session_end, pol, limits)

        self.prune_logs()
        report = self.db.write(tx)
        results = [self.after_cut(ep, process) for ep in report.episodes]
        return {
            "project_id": proj.id,
            "session_id": session_id,
            "accepted": report.accepted,
            "pending_events": report.pending_events,
            "episodes": results,
        }

    def ingest_in(
        self,
        conn: apsw.Connection,
        proj: Project,
        owner: tuple[str, str],
        session_id: str,
        events: Sequence[EventIn],
        session_end: bool,
        pol: Policy,
        limits: episodes.Limits,
        prepared: episodes.Prepared | None = None,
    ) -> episodes.IngestReport:
        """Append a session's events inside the caller's write transaction (from `prepared`,
        their compressed form made before it, when given); the episodes it cut are handed to
        `after_cut` once that transaction has committed."""
        ssql.touch_project(conn, proj.id, proj.root, now_iso(), proj.identity)
        if prepared is not None and prepared.args["project_id"] == proj.id:
            return episodes.apply(conn, prepared, pol.regret)
        return episodes.ingest(
            conn,
            project_id=proj.id,
            owner=owner,
            session_id=session_id,
            events=events,
            session_end=session_end,
            limits=limits,
            regret=pol.regret,
        )

    def flush(
        self,
        *,
        project_id: str | None,
        project_root: str | None,
        session_id: str | None = None,
        process: bool = True,
        wait: bool = False,
    ) -> dict[str, Any]:
        """Cut the open episode of a session (or of every session of the project) now; with
        `wait`, an LLM writer's call happens inside this call instead of in the background."""
        proj = self.project(project_id, project_root)
        pol = self.policy(proj.root)
        limits = self.limits()
        session_id = safe_session_id(session_id)

        def tx(conn: apsw.Connection) -> list[dict[str, Any]]:
            if session_id is not None:
                sess = ssql.get_session(conn, session_id)
                if sess is not None and sess["project_id"] != proj.id:
                    raise InvalidInput(
                        "session_id", f"session belongs to project {sess['project_id']!r}"
                    )
                sessions = [session_id]
            else:
                sessions = ssql.open_sessions(conn, proj.id)
            out = []
            for sid in sessions:
                ep = episodes.flush_session(conn, sid, limits, pol.regret)
                if ep is not None:
                    out.append(ep)
            return out

        cut = self.db.write(tx)
        return {
            "project_id": proj.id,
            "episodes": [self.after_cut(ep, process, wait) for ep in cut],
        }

    def pending_events(self, session_ids: Iterable[str]) -> dict[str, int]:
        """Events of these sessions not yet cut into an episode, by session (none: left out)."""
        ids = sorted(set(session_ids))
        return self.db.read(lambda c: ssql.pending_events_of(c, ids)) if ids else {}

    def limits(self) -> episodes.Limits:
        s = self.settings
        return episodes.Limits(
            max_episode_events=s.max_episode_events, writer_min_tool_calls=s.writer_min_tool_calls
        )

    def after_cut(self, ep: dict[str, Any], process: bool, wait: bool = False) -> dict[str, Any]:
        out = dict(ep)
        if not ep["call_writer"]:
            out["outcome"] = "skipped"
        elif not process:
            out["outcome"] = "pending"
        elif wait or self.writer_kind() == "rules":
            # the offline writer takes milliseconds: its memories are part of this write
            out.update(self.process_episode(ep["episode_id"]))
        else:
            # an LLM call can take seconds: it runs in the background, so no request of this
            # connection waits on the network; its memories appear when it finishes
            self.enqueue(ep["episode_id"])
            out["outcome"] = "queued"
        return out

    # -- the background Memory Writer ---------------------------------------------------------

    def enqueue(self, episode_id: str, *, retry_failed: bool = False) -> None:
        """Have a background writer thread process this episode (once, even if asked twice);
        with `retry_failed`, also when its last call failed."""
        with self._queue_lock:
            if self._closing.is_set():
                return
            if retry_failed:
                self._retrying.add(episode_id)  # seen by the worker even if already queued
            if episode_id in self._queued:
                return
            if not self._workers:
                self._start_workers()  # may queue this episode already (it is pending)
            if episode_id in self._queued:
                return
            self._queued.add(episode_id)
            self._queue.put(episode_id)

    def _start_workers(self) -> None:
        import queue

        self._queue = queue.Queue()
        for i in range(max(1, self.settings.writer_max_concurrent_calls)):
            # daemon threads: a call in flight at exit is abandoned, its claim goes stale and
            # the episode is processed again later; nothing is lost
            t = threading.Thread(target=self._work, name=f"memory-writer-{i}", daemon=True)
            t.start()
            self._workers.append(t)
        # episodes left pending by an earlier process (exit, budget) are taken up again
        for eid in self.db.read(
            lambda c: ssql.unprocessed_episodes(c, None, 1000, only_pending=True)
        ):
            if eid not in self._queued:
                self._queued.add(eid)
                self._queue.put(eid)

    def _work(self) -> None:
        while not self._closing.is_set():
            eid = self._queue.get()
            if eid is None:
                return
            with self._queue_lock:
                retry = eid in self._retrying
                self._retrying.discard(eid)
            try:
                self.process_episode(eid, retry_failed=retry)
            except Exception as exc:  # the episode keeps its state; the worker keeps going
                if self.log:
                    self.log.warning("writer_worker_error", episode_id=eid, error=repr(exc))
            finally:
                with self._queue_lock:
                    if eid in self._retrying and not self._closing.is_set():
                        self._queue.put(eid)  # retried while this call ran: once more, after it
                    else:
                        self._queued.discard(eid)

    def unwritten(self) -> int:
        """Episodes waiting for the writer or being written."""
        counts = self.db.read(ssql.count_episodes)
        return counts.get("pending", 0) + counts.get("running", 0)

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """True once no episode is queued or being written by this process (for tests, CLI)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._queue_lock:
                if not self._queued:
                    return True
            time.sleep(0.02)
        return False

    def close(self) -> None:
        """Stop the background writers; queued episodes stay pending for the next start."""
        self._closing.set()
        with self._queue_lock:
            for _ in self._workers:
                self._queue.put(None)

    def prune_logs(self, *, every_s: float = 3600.0) -> dict[str, int] | None:
        """Forget log rows older than `log_retention_days`; at most once per `every_s` per
        process (each call that writes a log row comes here, so the logs stay bounded)."""
        now = time.monotonic()
        if self._pruned_at is not None and now - self._pruned_at < every_s:
            return None
        self._pruned_at = now
        before = iso(datetime.now(UTC) - timedelta(days=self.settings.log_retention_days))
        gone = self.db.write(lambda c: ssql.prune_logs(c, before))
        if self.log and any(gone.values()):
            self.log.info("logs_pruned", before=before, **gone)
        return gone

    def process_episode(
        self, episode_id: str, *, force: bool = False, retry_failed: bool = True
    ) -> dict[str, Any]:
        """Run the Memory Writer on one stored episode and commit its ops.

        The ops, the evidence and the episode's new state commit in one transaction, and only
        while this call still holds the episode's claim. A failed call or invalid output leaves
        the episode unprocessed with the reason (retry it later); nothing is lost.
        """
        self.prune_logs()
        claimed = f"{now_iso()} {new_id('claim')} {claimant()}"
        stale = iso(datetime.now(UTC) - self._stale_after)
        ep = self.db.read(lambda c: ssql.get_episode(c, episode_id))
        if ep is None:
            raise NotFound("episode", episode_id, field="episode_id")
        if ep.processed and not force:
            return {"episode_id": episode_id, "outcome": ep.outcome, "reason": "already processed"}
        if ep.outcome == "failed" and not retry_failed:
            return {"episode_id": episode_id, "outcome": "failed", "reason": ep.outcome_reason}

        # whether the process holding a running claim is gone: /proc, read before the write lock
        abandoned = ep.outcome_reason if ep.outcome == "running" else None
        if abandoned is not None and not _claimant_died(abandoned):
            abandoned = None

        def claim(conn: apsw.Connection) -> bool:
            if force and ep.processed:
                ssql.reopen_episode(conn, episode_id)
            return ssql.claim_episode(conn, episode_id, claimed, stale, abandoned)

        if not self.db.write(claim):
            return {"episode_id": episode_id, "outcome": "running", "reason": "claimed elsewhere"}
        try:
            kind = self.writer_kind()
            output, sources, call, turned_away = self._write(ep, kind)
        except Exception as exc:
            reason = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            outcome = "pending" if isinstance(exc, _Deferred) else "failed"
            self.db.write(
                lambda c: ssql.finish_episode(
                    c, episode_id, processed=0, outcome=outcome, reason=reason, claim=claimed
                )
            )
            if self.log:
                self.log.warning("writer_failed", episode_id=episode_id, reason=reason)
            return {"episode_id": episode_id, "outcome": outcome, "reason": reason}
        ev = output.episode_evidence
        done: dict[str, Any] = {}

        def finish(conn: apsw.Connection, result: Any) -> None:
            ops = [_public_result(r) for r in result.results]
            summary = ", ".join(
                f"{n} {a}"
                for a in ("added", "updated", "deprecated", "deduplicated", "rejected")
                if (n := result.count(a))
            )
            if turned_away:
                # the writer's own junk gate: each candidate it turned away, with the reason
                ops += [{"action": "rejected", "stage": "writer", **r} for r in turned_away]
                summary = ", ".join(
                    x for x in (summary, f"{len(turned_away)} turned away by the junk gate") if x
                )
            if not ssql.finish_episode(
                conn,
                episode_id,
                processed=1,
                outcome="written",
                reason=summary or "the writer found nothing worth remembering",
                ops=ops,
                claim=claimed,
            ):
                # another process took the episode over (our claim went stale): roll back
                raise _LostClaim(episode_id)
            done["ops"] = ops

        try:
            commit(
                self.db,
                self.vectors,
                output.ops,
                CommitContext(
                    project_id=ep.project_id,
                    owner_type=ep.owner_type,
                    owner_id=ep.owner_id,
                    episode_id=episode_id,
                    source=(ev.source if ev else None),
                    frustration=(ev.frustration if ev else None) or ep.stats.user_frustration,
                    op_sources=sources,
                    protected_kinds=tuple(self.project_policy(ep.project_id).protected_kinds),
                    after=finish,
                    known_secrets=_known_secrets(ep.project_id, ep.session_id),
                ),
                dedup_threshold=self.settings.dedup_threshold,
            )
        except _LostClaim:
            return {"episode_id": episode_id, "outcome": "running", "reason": "claimed elsewhere"}
        return {
            "episode_id": episode_id,
            "outcome": "written",
            "writer": kind,
            "ops": done["ops"],
            "writer_call": call,
        }

    def _write(
        self, ep: Any, kind: str
    ) -> tuple[WriterOutput, dict[int, str], dict[str, Any], list[dict[str, str]]]:
        assert ep.events is not None  # read with them: they never change once cut
        # the offline writer fills key slots: it is shown the held ones (a search for the
        # memories most like the episode costs it 5x its own time; the commit layer turns
        # near-identical texts into duplicates of what is stored anyway)
        existing = self._keyed(ep) if kind == "rules" else self._similar_existing(ep)
        started = now_iso()
        t0 = time.perf_counter()
        call: dict[str, Any] = {
            "id": new_id("call"),
            "episode_id": ep.id,
            "writer": kind,
            "started_at": started,
        }
        if kind == "rules":
            output, sources, turned_away = rules.write(
                ep.id, ep.events, msgspec.structs.asdict(ep.stats), existing
            )
            call.update(duration_ms=(time.perf_counter() - t0) * 1000, ok=True, ops=len(output.ops))
            self.db.write(lambda c: ssql.record_call(c, call))
            return output, sources, call, turned_away
        client = self._llm() if self._llm else None
        assert client is not None
        pol = self.project_policy(ep.project_id)
        system, user, report = llm_writer.build_prompt(
            {
                "id": ep.id,
                "project_id": ep.project_id,
                "events": ep.events,
                "stats": msgspec.structs.asdict(ep.stats),
            },
            existing,
            (ep.owner_type, ep.owner_id),
            _policy_text(pol),
            self.settings.writer_max_input_tokens,
        )
        estimate = count_tokens(system) + count_tokens(user)
        day = started[:10]
        spent = self.db.read(lambda c: ssql.tokens_today(c, day))
        budget = self.settings.writer_daily_token_budget
        if spent + estimate + self.settings.writer_max_output_tokens > budget:
            raise _Deferred(
                f"daily writer token budget reached ({spent} of {budget} tokens used today);"
                " retry tomorrow or raise writer_daily_token_budget"
            )
        call["model"] = client.settings.model
        error = None
        completion = None
        with self._llm_slots:
            try:
                completion = llm_writer.call(
                    client, system, user, self.settings.writer_max_output_tokens
                )
                output = llm_writer.parse_output(completion.text)
            except Exception as exc:
                error = exc
        call.update(
            duration_ms=(time.perf_counter() - t0) * 1000,
            input_tokens=(
                completion.input_tokens
                if completion and completion.input_tokens is not None
                else estimate
            ),
            output_tokens=(
                completion.output_tokens
                if completion and completion.output_tokens is not None
                else (count_tokens(completion.text) if completion else 0)
            ),
            ok=error is None,
            ops=0 if error else len(output.ops),
            error=None if error is None else (getattr(error, "message", None) or str(error)),
            summarised=report["summarised"],
        )
        self.db.write(lambda c: ssql.record_call(c, call))
        if error is not None:
            raise error
        source = output.episode_evidence.source if output.episode_evidence else None
        return output, {i: source for i in range(len(output.ops)) if source}, call, []

    def _keyed(self, ep: Any) -> list[Memory]:
        """The live keyed memories of the episode's project and owner."""
        owner = (ep.owner_type, ep.owner_id)

        def read(conn: apsw.Connection) -> list[Memory]:
            ids = msql.keyed_ids(conn, ep.project_id, owner)
            return list(msql.get_memories(conn, sorted(ids)).values())

        return self.db.read(read)

    def _similar_existing(self, ep: Any, k: int = 8) -> list[Memory]:
        """The live memories of the episode's scope most like what happened in it."""
        words = [e.get("summary") or "" for e in ep.events if e["role"] == "user"][:5]
        words += [e.get("error_line") or "" for e in ep.events if e.get("error_line")][:5]
        query = " ".join(w for w in words if w)[:2000]
        pol = self.project_policy(ep.project_id)
        # every memory the writer may want to update: repo_path ones too, expired protected ones
        scope = ctxmod.Scope(
            project_id=ep.project_id,
            owner=(ep.owner_type, ep.owner_id),
            path=None,
            protected=pol.protected_kinds,
            require_path=False,
        )
        cands, _used = ctxmod.candidates(self.db, self.vectors, query, scope, pol, key_lookup=True)
        cands.sort(key=lambda c: (not c.by_key, -c.score))
        return [c.memory for c in cands[:k]]

    def retry(
        self, episode_id: str | None, project_id: str | None = None, *, wait: bool = False
    ) -> dict[str, Any]:
        """Run the writer again on one episode, or on every unprocessed one: now with the
        offline writer or `wait`, else queued for the background writer."""
        if episode_id is not None:
            if self.db.read(lambda c: ssql.get_episode(c, episode_id, False)) is None:
                raise NotFound("episode", episode_id, field="episode_id")
            ids = [episode_id]
        else:
            ids = self.db.read(lambda c: ssql.unprocessed_episodes(c, project_id, 1000))
        if wait or self.writer_kind() == "rules":
            return {"episodes": [self.process_episode(i) for i in ids]}
        for i in ids:
            self.enqueue(i, retry_failed=True)
        return {"episodes": [{"episode_id": i, "outcome": "queued"} for i in ids]}

    # -- explicit writes --------------------------------------------------------------------

    def add_memory(
        self,
        *,
        project_id: str | None,
        project_root: str | None,
        op: WriterOp,
        owner_type: str | None,
        owner_id: str | None,
    ) -> dict[str, Any]:
        """An explicit memory, through the same commit layer as the writer's (provisional)."""
        proj = None
        if op.scope != "global":
            proj = self.project(project_id, project_root)
        elif project_id is not None or project_root is not None:
            raise InvalidInput("scope", "a global memory belongs to no project: drop project_id")
        owner = self.owner(owner_type, owner_id)
        if proj is not None:
            self.db.write(
                lambda c: ssql.touch_project(c, proj.id, proj.root, now_iso(), proj.identity)
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
        out: dict[str, Any] = {"memory": self.db.read(lambda c: msql.get_memory(c, mid))}
        if res["action"] == "deduplicated":
            out["deduplicated_into"] = mid
            out["reason"] = res["reason"]
        if res.get("replaced"):
            out["replaced"] = res["replaced"]
        return out

    # -- reading memories -------------------------------------------------------------------

    def get_task_context(
        self,
        *,
        project_id: str | None,
        project_root: str | None,
        task: str | None,
        owner_type: str | None = None,
        owner_id: str | None = None,
        path: str | None = None,
        session_id: str | None = None,
        budget: int = 400,
        exclude_injected: bool = False,
        relevant_only: bool = False,
    ) -> dict[str, Any]:
        proj = self.project(project_id, project_root)
        rel = relative_path(path, proj.root)
        self.prune_logs()
        return ctxmod.get_task_context(
            self.db,
            self.vectors,
            self.policy(proj.root),
            project_id=proj.id,
            task=task,
            owner=self.owner(owner_type, owner_id),
            path=rel,
            session_id=safe_session_id(session_id),
            budget=budget,
            exclude_injected=exclude_injected,
            relevant_only=relevant_only,
        )

    def search(
        self,
        *,
        query: str,
        project_id: str | None,
        project_root: str | None,
        include_global: bool = True,
        owner_type: str | None = None,
        owner_id: str | None = None,
        kinds: Sequence[str] | None = None,
        statuses: Sequence[str] = LIVE,
        path: str | None = None,
        limit: int = 20,
    ) -> dict[str, Any]:
        proj = (
            self.project(project_id, project_root)
            if project_id is not None or project_root is not None
            else None
        )
        owner = self.owner(owner_type, owner_id) if owner_type is not None or owner_id else None
        pol = self.policy(proj.root if proj else None)
        scope = ctxmod.Scope(
            project_id=proj.id if proj else None,
            owner=owner,
            path=relative_path(path, proj.root if proj else None) if path else None,
            include_global=include_global,
            statuses=tuple(statuses),
            kinds=tuple(kinds) if kinds else None,
            protected=pol.protected_kinds,
            require_path=False,  # a search shows repo_path memories unless a path narrows it
        )
        return ctxmod.search(self.db, self.vectors, pol, query=query, scope=scope, limit=limit)

    def get_memory(self, memory_id: str) -> dict[str, Any]:
        def read(conn: apsw.Connection) -> dict[str, Any]:
            m = msql.get_memory(conn, memory_id)
            if m is None:
                raise NotFound("memory", memory_id, field="memory_id")
            return {
                "memory": m,
                "evidence": msql.evidence_of(conn, memory_id),
                "metrics": msql.metrics_of(conn, [memory_id]).get(memory_id),
            }

        return self.db.read(read)

    def list_memories(
        self,
        *,
        project_id: str | None,
        project_root: str | None,
        include_global: bool,
        statuses: Sequence[str],
        kinds: Sequence[str] | None,
        scope: str | None,
        owner_type: str | None,
        owner_id: str | None,
        key_prefix: str | None,
        limit: int,
        cursor: str | None,
    ) -> dict[str, Any]:
        pids: list[str | None] | None = None
        if project_id is not None or project_root is not None:
            pids = [self.project(project_id, project_root).id]
            if include_global:
                pids.append(None)
        after = decode_cursor(cursor, "squirrel/memories/list")
        owner = (owner_type or "user", owner_id) if owner_id else None
        rows = self.db.read(
            lambda c: msql.list_memories(
                c,
                project_ids=pids,
                statuses=statuses,
                kinds=kinds,
                scope=scope,
                owner=owner,
                key_prefix=key_prefix,
                after_rowid=after,
                limit=limit + 1,
            )
        )
        mems, next_cursor = page(rows, limit)
        ids = [m.id for m in mems]
        metrics = self.db.read(lambda c: msql.metrics_of(c, ids))
        return {
            "memories": mems,
            "metrics": [metrics.get(i) for i in ids],
            "next_cursor": next_cursor,
        }

    # -- changing memories ------------------------------------------------------------------

    def update_memory(self, memory_id: str, changes: dict[str, Any]) -> dict[str, Any]:
        """Edit a memory in place (text, kind, tier, key, confidence, ttl, polarity, status)."""
        from reos_memory.squirrel.redaction import redact

        text = changes.get("text")
        if text is not None:
            text = redact(" ".join(text.split()))
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

            m = msql.get_memory(conn, memory_id)
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
            msql.update_memory(conn, memory_id, now_iso(), **fields)
            out = msql.get_memory(conn, memory_id)
            assert out is not None
            return out

        return {"memory": self.db.write(tx)}

    def deprecate(self, memory_id: str) -> dict[str, Any]:
        return self.update_memory(memory_id, {"status": "deprecated"})

    def forget(self, memory_id: str) -> dict[str, Any]:
        """Erase a memory for good: the row, its vector, evidence, metrics and injections."""

        def tx(conn: apsw.Connection) -> dict[str, int]:
            if msql.get_memory(conn, memory_id) is None:
                raise NotFound("memory", memory_id, field="memory_id")
            return msql.delete_memory(conn, memory_id)

        removed = self.db.write(tx)
        if self.vectors is not None:  # the saved index file still holds its vector
            from reos_memory.store.vectors import MEMORIES

            self.vectors.drop_saved_index(MEMORIES)
        return {"forgotten": True, "memory_id": memory_id, "removed": removed}

    # -- episodes ---------------------------------------------------------------------------

    def list_episodes(
        self,
        *,
        project_id: str | None,
        project_root: str | None,
        session_id: str | None,
        outcome: str | None,
        limit: int,
        cursor: str | None,
    ) -> dict[str, Any]:
        pid = (
            self.project(project_id, project_root).id
            if project_id is not None or project_root is not None
            else None
        )
        rows = self.db.read(
            lambda c: ssql.list_episodes(
                c,
                project_id=pid,
                session_id=session_id,
                outcome=outcome,
                after_rowid=decode_cursor(cursor, "squirrel/episodes/list"),
                limit=limit + 1,
            )
        )
        eps, next_cursor = page(rows, limit)
        return {"episodes": eps, "next_cursor": next_cursor}

    def get_episode(self, episode_id: str) -> dict[str, Any]:
        ep = self.db.read(lambda c: ssql.get_episode(c, episode_id, True))
        if ep is None:
            raise NotFound("episode", episode_id, field="episode_id")
        return {"episode": ep}

    # -- feedback, CR-Memory, status --------------------------------------------------------

    def feedback(self, context_id: str, outcome: dict[str, Any]) -> dict[str, Any]:
        def tx(conn: apsw.Connection) -> dict[str, Any]:
            ctx = ssql.get_context(conn, context_id)
            if ctx is None:
                raise NotFound("context", context_id, field="context_id")
            root = ssql.project_root(conn, ctx["project_id"]) if ctx["project_id"] else None
            pol = self.policy(root)
            return feedback.apply(conn, context_id, outcome, pol.regret, now_iso(), "explicit")

        return self.db.write(tx)

    def cr_memory(
        self,
        project_id: str | None,
        project_root: str | None,
        dry_run: bool,
        cancelled: Callable[[], bool] | None = None,
    ) -> dict[str, Any]:
        proj = (
            self.project(project_id, project_root)
            if project_id is not None or project_root is not None
            else None
        )
        return cr_memory.run(
            self.db,
            project_id=proj.id if proj else None,
            policy_for=self.project_policy,
            dry_run=dry_run,
            cancelled=cancelled,
        )

    def policy_info(self, project_root: str | None) -> dict[str, Any]:
        root = project_for_root(project_root).root if project_root is not None else None
        pol = self.policy(root)
        return {"policy": pol.raw, "sources": pol.sources}

    def status(self) -> dict[str, Any]:
        def read(conn: apsw.Connection) -> dict[str, Any]:
            return {
                "memories": {
                    "by_status": msql.count_by(conn, "status"),
                    "by_kind": msql.count_by(conn, "kind"),
                    "by_tier": msql.count_by(conn, "tier"),
                },
                "episodes": ssql.count_episodes(conn),
                "pending_events": ssql.pending_event_count(conn),
                "open_sessions": len(ssql.open_sessions(conn, None)),
                "projects": len(ssql.project_ids(conn)),
                "writer_calls_by_day": ssql.calls_by_day(conn, 7),
                "tokens_today": ssql.tokens_today(conn, now_iso()[:10]),
                "transcripts": tsql.summary(conn),
            }

        out = self.db.read(read)
        try:
            out["writer"] = self.writer_kind()
        except InvalidInput as exc:
            out["writer"] = f"misconfigured: {exc.message}"
        out["writer_daily_token_budget"] = self.settings.writer_daily_token_budget
        out["writer_config"] = self.writer_config()
        out["owner_id"] = self.owner(None, None)[1]
        return out


class _LostClaim(Exception):
    """The episode was claimed by another process while this one was writing."""


class _Deferred(Exception):
    """The writer was not called (budget); the episode stays pending."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _known_secrets(project_id: str, session_id: str | None) -> Callable[[str], str] | None:
    """Redaction of the values the session showed as secrets (None: this process knows none)."""
    from reos_memory.squirrel.ingest.episodes import session_scope_key
    from reos_memory.squirrel.redaction import peek_scope

    if session_id is None:
        return None
    scope = peek_scope(session_scope_key(project_id, session_id))
    return None if scope is None or not scope.values else scope.known


def _public_result(r: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in r.items() if k != "memory"}
    m = r.get("memory")
    if m is not None:
        out["text"] = m.text
        out["kind"] = m.kind
        out["tier"] = m.tier
        out["key"] = m.key
    return out


def _check_key_free(conn: apsw.Connection, m: Memory, changes: dict[str, Any]) -> None:
    """A key names one live memory (of a project, scope and owner): an edit that would make a
    second live holder, by a new key or by reviving a deprecated memory, is a Conflict."""
    key = changes.get("key", m.key)
    if key is None or changes.get("status", m.status) == "deprecated":
        return
    if "key" not in changes and ("status" not in changes or m.status != "deprecated"):
        return
    holders = msql.live_by_key(conn, key, m.project_id, m.scope, m.owner_type, m.owner_id)
    other = next((h for h in holders if h.id != m.id), None)
    if other is not None:
        field = "key" if "key" in changes else "status"
        raise Conflict(
            f"key {key!r} is held by the live memory {other.id}; deprecate it or clear its key"
            " first",
            field=f"$.{field}",
            existing_id=other.id,
        )


def _policy_text(pol: Policy) -> str:
    """The shipped policy followed by each override file, as the writer's system prompt shows it."""
    from pathlib import Path

    parts = [default_text()]
    for src in pol.sources[1:]:
        try:
            parts.append(f"# overrides from {src}\n{Path(src).read_text('utf-8')}")
        except OSError:
            continue
    return "\n".join(parts)
