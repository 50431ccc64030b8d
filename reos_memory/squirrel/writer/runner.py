"""Where episodes are learned: the one place that says in which execution context the Memory
Writer runs on a cut episode, and how two of them never write the same episode twice.

An episode, once cut and stored (`squirrel/ingest/episodes.py`), is learned in one of five places:

1. **Inline**, in the request that cut it (`Runner.after_cut`): the offline writer takes
   milliseconds, so its memories are part of the reply (`squirrel/ingest`, `flush`, `retry` and
   any request with `wait`).
2. **A background writer thread** of this process (`Runner.enqueue`, `writer_max_concurrent_calls`
   threads): an LLM or agent-CLI writer waits seconds on the network, so the request answers
   `queued` and the memories appear when the call ends. Episodes left pending by an earlier
   process (exit, budget) are taken up again when the threads start.
3. **`sqrl ingest`'s learning thread** (`CatchUp`): a catch-up reads and cuts logs on the main
   thread while one thread learns the episodes already cut, in order.
4. **The ingest helper process** (`squirrel/writer/helper_process.py`): a catch-up of many
   megabytes learns in a second process on the other core; `CatchUp` routes to it and takes its
   work back at its first failure.
5. **The agent hooks' queue worker** (`interfaces/agent_hooks/`): a detached process that
   ingests the transcripts the hooks queued, learning inline as in 1.

Whichever it is, `Runner.process_episode` does the work under a **claim**: a row-level mark on the
episode (`claim_episode`), naming the claimant process (host, pid namespace, pid, start time). The
ops, the evidence and the episode's new state commit in one transaction, and only while the claim
is still held; a claim of a process that died is free at once, any other after `STALE_CLAIM` (or
twice the longest a writer call may take). The daily token budget (`writer_daily_token_budget`)
and the concurrent-call limit are kept here too: an episode over budget stays pending.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import apsw
import msgspec
from msgspec.structs import replace

from reos_memory.errors import InvalidInput, NotFound
from reos_memory.models import Memory, iso, new_id, now_iso
from reos_memory.squirrel import api
from reos_memory.squirrel.memory import local_context as ctxmod
from reos_memory.squirrel.memory import ranking
from reos_memory.squirrel.memory.commit import CommitContext, Vectors, commit
from reos_memory.squirrel.memory.policy import Policy, default_text
from reos_memory.squirrel.token_count import count_tokens
from reos_memory.squirrel.writer import llm as llm_writer
from reos_memory.squirrel.writer import offline as rules
from reos_memory.squirrel.writer.claims import claimant, claimant_died
from reos_memory.squirrel.writer.schema import WriterOutput
from reos_memory.store import Database
from reos_memory.store import episodes as episode_sql
from reos_memory.store import memories as memory_sql
from reos_memory.store import projects as project_sql
from reos_memory.store import writer_calls as call_sql

if TYPE_CHECKING:
    from reos_memory.squirrel.facade import Settings

T = TypeVar("T")

STALE_CLAIM = timedelta(minutes=15)  # a claim older than this belonged to a process that died


class Runner:
    """The Memory Writer of one process: inline runs, the background threads, the claims and
    the budget."""

    def __init__(
        self,
        db: Database,
        vectors: Vectors | None,
        settings: Settings,
        llm: Callable[[], Any] | None,
        log: Any,
        policy_for: Callable[[str | None], Policy],
        prune_logs: Callable[[], Any],
        share: Callable[[str], api.TeamEpisode | None] | None = None,
    ) -> None:
        self.db = db
        # queues a cut episode for the team server's Memory Writer (None: not shared)
        self.share = share
        self.vectors = vectors
        self.settings = settings
        self._llm = llm
        self.log = log
        self.policy_for = policy_for  # the policy in force for a project, by id
        self.prune_logs = prune_logs
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

    def after_cut(self, ep: api.EpisodeRun, process: bool, wait: bool = False) -> api.EpisodeRun:
        team = self._share(ep.episode_id) if ep.call_writer and self.share is not None else None
        if not ep.call_writer:
            return replace(ep, outcome="skipped", team=team)
        if not process:
            return replace(ep, outcome="pending", team=team)
        if wait or self.writer_kind() == "rules":
            # the offline writer takes milliseconds: its memories are part of this write
            run = self.process_episode(ep.episode_id)
            return replace(
                ep,
                outcome=run.outcome,
                reason=run.reason,
                writer=run.writer,
                ops=run.ops,
                writer_call=run.writer_call,
                team=team,
            )
        # an LLM call can take seconds: it runs in the background, so no request of this
        # connection waits on the network; its memories appear when it finishes
        self.enqueue(ep.episode_id)
        return replace(ep, outcome="queued", team=team)

    def _share(self, episode_id: str) -> api.TeamEpisode | None:
        """Queue the episode for the team's Memory Writer (a local write; the next sync sends
        it). Sharing is an extra: a failure here is logged and the episode is learned here all
        the same."""
        assert self.share is not None
        try:
            return self.share(episode_id)
        except Exception as exc:
            if self.log:
                self.log.warning("team_episode_not_queued", episode_id=episode_id, error=repr(exc))
            return None

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
            lambda c: episode_sql.unprocessed_episodes(c, None, 1000, only_pending=True)
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
        counts = self.db.read(episode_sql.count_episodes)
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

    def process_episode(
        self, episode_id: str, *, force: bool = False, retry_failed: bool = True
    ) -> api.WriterRun:
        """Run the Memory Writer on one stored episode and commit its ops.

        The ops, the evidence and the episode's new state commit in one transaction, and only
        while this call still holds the episode's claim. A failed call or invalid output leaves
        the episode unprocessed with the reason (retry it later); nothing is lost.
        """
        self.prune_logs()
        ep = self.db.read(lambda c: episode_sql.get_episode(c, episode_id))
        if ep is None:
            raise NotFound("episode", episode_id, field="episode_id")
        if ep.processed and not force:
            return api.WriterRun(
                episode_id=episode_id, outcome=ep.outcome, reason="already processed"
            )
        if ep.outcome == "failed" and not retry_failed:
            return api.WriterRun(episode_id=episode_id, outcome="failed", reason=ep.outcome_reason)
        claimed = self._claim(ep, force)
        if claimed is None:
            return _claimed_elsewhere(episode_id)
        try:
            kind = self.writer_kind()
            output, sources, call, turned_away = self._write(ep, kind)
        except Exception as exc:
            return self._unwritten(episode_id, claimed, exc)
        ops = self._commit(ep, claimed, output, sources, turned_away)
        if ops is None:
            return _claimed_elsewhere(episode_id)
        return api.WriterRun(
            episode_id=episode_id, outcome="written", writer=kind, ops=ops, writer_call=call
        )

    def _claim(self, ep: Any, force: bool) -> str | None:
        """Claim the episode for this process (its claim text), or None when another live
        process holds it."""
        claimed = f"{now_iso()} {new_id('claim')} {claimant()}"
        stale = iso(datetime.now(UTC) - self._stale_after)
        # whether the process holding a running claim is gone: /proc, read before the write lock
        abandoned = ep.outcome_reason if ep.outcome == "running" else None
        if abandoned is not None and not claimant_died(abandoned):
            abandoned = None

        def claim(conn: apsw.Connection) -> bool:
            if force and ep.processed:
                episode_sql.reopen_episode(conn, ep.id)
            return episode_sql.claim_episode(conn, ep.id, claimed, stale, abandoned)

        return claimed if self.db.write(claim) else None

    def _unwritten(self, episode_id: str, claimed: str, exc: Exception) -> api.WriterRun:
        """The writer failed (or was not called: budget): the episode stays unprocessed with
        the reason, pending or failed."""
        reason = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        outcome = "pending" if isinstance(exc, _Deferred) else "failed"
        self.db.write(
            lambda c: episode_sql.finish_episode(
                c, episode_id, processed=0, outcome=outcome, reason=reason, claim=claimed
            )
        )
        if self.log:
            self.log.warning("writer_failed", episode_id=episode_id, reason=reason)
        return api.WriterRun(episode_id=episode_id, outcome=outcome, reason=reason)

    def _commit(
        self,
        ep: Any,
        claimed: str,
        output: WriterOutput,
        sources: dict[int, str],
        turned_away: list[dict[str, str]],
    ) -> list[dict[str, Any]] | None:
        """Commit the writer's ops and the episode's new state in one transaction, while the
        claim still holds: the ops as stored, or None when another process took the episode."""
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
            if not episode_sql.finish_episode(
                conn,
                ep.id,
                processed=1,
                outcome="written",
                reason=summary or "the writer found nothing worth remembering",
                ops=ops,
                claim=claimed,
            ):
                # another process took the episode over (our claim went stale): roll back
                raise _LostClaim(ep.id)
            done["ops"] = ops

        root = (
            self.db.read(lambda c: project_sql.project_root(c, ep.project_id))
            if ep.project_id is not None
            else None
        )
        try:
            commit(
                self.db,
                self.vectors,
                output.ops,
                CommitContext(
                    project_id=ep.project_id,
                    owner_type=ep.owner_type,
                    owner_id=ep.owner_id,
                    episode_id=ep.id,
                    source=(ev.source if ev else None),
                    frustration=(ev.frustration if ev else None) or ep.stats.user_frustration,
                    op_sources=sources,
                    protected_kinds=tuple(self.policy_for(ep.project_id).protected_kinds),
                    after=finish,
                    known_secrets=_known_secrets(ep.project_id, ep.session_id),
                    project_root=root,
                    portable_paths=True,
                ),
                dedup_threshold=self.settings.dedup_threshold,
            )
        except _LostClaim:
            return None
        ops: list[dict[str, Any]] = done["ops"]
        return ops

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
            self.db.write(lambda c: call_sql.record_call(c, call))
            return output, sources, call, turned_away
        client = self._llm() if self._llm else None
        assert client is not None
        pol = self.policy_for(ep.project_id)
        stats = msgspec.structs.asdict(ep.stats)
        # the rules' reading of the same episode (pairs, outcomes, what passed) goes with it;
        # evidence only: when the rules cannot read the episode, the model reads it alone
        try:
            read: dict[str, Any] | None = rules.reading(
                rules.write(ep.id, ep.events, stats, existing)
            )
        except Exception as exc:
            if self.log:
                self.log.warning("rules_reading_failed", episode_id=ep.id, error=repr(exc))
            read = None
        system, user, report = llm_writer.build_prompt(
            {"id": ep.id, "project_id": ep.project_id, "events": ep.events, "stats": stats},
            existing,
            (ep.owner_type, ep.owner_id),
            _policy_text(pol),
            self.settings.writer_max_input_tokens,
            reading=read,
        )
        estimate = count_tokens(system) + count_tokens(user)
        day = started[:10]
        spent = self.db.read(lambda c: call_sql.tokens_today(c, day))
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
        self.db.write(lambda c: call_sql.record_call(c, call))
        if error is not None:
            raise error
        source = output.episode_evidence.source if output.episode_evidence else None
        return output, {i: source for i in range(len(output.ops)) if source}, call, []

    def _keyed(self, ep: Any) -> list[Memory]:
        """The live keyed memories of the episode's project and owner, and what earlier episodes
        of its session wrote (the offline writer deprecates a cause the session took back)."""
        owner = (ep.owner_type, ep.owner_id)

        def read(conn: apsw.Connection) -> list[Memory]:
            ids = set(memory_sql.keyed_ids(conn, ep.project_id, owner))
            if ep.session_id is not None:
                ids.update(memory_sql.session_memory_ids(conn, ep.session_id, ep.id))
            return list(memory_sql.get_memories(conn, sorted(ids)).values())

        return self.db.read(read)

    def _similar_existing(self, ep: Any, k: int = 8) -> list[Memory]:
        """The live memories of the episode's scope most like what happened in it."""
        words = [e.get("summary") or "" for e in ep.events if e["role"] == "user"][:5]
        words += [e.get("error_line") or "" for e in ep.events if e.get("error_line")][:5]
        query = " ".join(w for w in words if w)[:2000]
        pol = self.policy_for(ep.project_id)
        # every memory the writer may want to update: repo_path ones too, expired protected ones
        scope = ranking.Scope(
            project_id=ep.project_id,
            owners=frozenset({(ep.owner_type, ep.owner_id)}),
            path=None,
            protected=pol.protected_kinds,
            require_path=False,
        )
        cands, _used = ctxmod.candidates(self.db, self.vectors, query, scope, pol, key_lookup=True)
        cands.sort(key=lambda c: (not c.by_key, -c.score))
        return [c.memory for c in cands[:k]]


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


class Helper(Protocol):
    """A second process that learns from cut episodes on the same database
    (`reos_memory.squirrel.writer.helper_process`)."""

    def learn(self, episode: api.EpisodeRun) -> Future[api.EpisodeRun]: ...

    def stop(self) -> None: ...


class CatchUp:
    """Where a catch-up's cut episodes are learned (contexts 3 and 4): a writer thread of this
    process, or the helper
    process when there is one. Sessions end here either way (a short transaction), their last
    episodes learned like the others. The first failure of the helper stops it (its claims die
    with it), and what it was given and had not finished is done here, in order, and so is all
    that follows: each of its tasks committed whole or left nothing."""

    def __init__(self, runner: Runner, helper: Helper | None) -> None:
        self.runner = runner
        self.helper = helper
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-writer")
        self._lock = threading.Lock()
        self._closing = False

    def learn(self, ep: api.EpisodeRun) -> Future[api.EpisodeRun]:
        def here() -> api.EpisodeRun:
            return self.runner.after_cut(ep, True)

        return self._route(lambda h: h.learn(ep), here)

    def _route(self, there: Callable[[Helper], Future[T]], here: Callable[[], T]) -> Future[T]:
        helper = self.helper
        if helper is None:
            return self.pool.submit(here)
        out: Future[T] = Future()

        def settle(f: Future[T]) -> None:
            exc = None if f.cancelled() else f.exception()
            if not f.cancelled() and exc is None:
                out.set_result(f.result())
                return
            self._stop_helper(exc)
            if self._closing:
                out.cancel()
                return
            self.pool.submit(here).add_done_callback(lambda g: _copy(g, out))

        try:
            remote = there(helper)
        except Exception as exc:  # already broken or shut down
            self._stop_helper(exc)
            return self.pool.submit(here)
        remote.add_done_callback(settle)
        return out

    def _stop_helper(self, exc: BaseException | None) -> None:
        with self._lock:
            helper, self.helper = self.helper, None
        if helper is not None:
            if self.runner.log and not self._closing:
                self.runner.log.warning("ingest_helper_failed", error=repr(exc))
            helper.stop()

    def close(self) -> None:
        """Wait for the work queued here; on the way out of an error, drop what has not begun."""
        self._closing = sys.exc_info()[0] is not None
        self.pool.shutdown(wait=True, cancel_futures=self._closing)


def _copy(src: Future[T], dst: Future[T]) -> None:
    if src.cancelled():
        dst.cancel()
        return
    exc = src.exception()
    if exc is not None:
        dst.set_exception(exc)
    else:
        dst.set_result(src.result())


def _claimed_elsewhere(episode_id: str) -> api.WriterRun:
    return api.WriterRun(episode_id=episode_id, outcome="running", reason="claimed elsewhere")
