"""squirrel/search and squirrel/get_task_context on the team server: candidates found in
PostgreSQL, ranked by Squirrel's one ranking (`squirrel/memory/ranking.py`).

Candidates, as locally: memories found by key (`project.*` keys of the project), the project's
emergency guards, the nearest by vector and the best by full text (ts_rank_cd, relative to the
best hit as BM25 is locally), with the task's distinctive words (held by few memories of the
reach). Vector search is exact for a small reach (its rows come from the tenant's B-tree index)
and HNSW with an iterative scan for a large one, so a filter never leaves a tenant short of
results (store/team/memories.py: `nearest`). The ranking, floor, guards-first order, budget
fitting and the reasons for every memory left out are the local service's code."""

from __future__ import annotations

import uuid

import psycopg

import reos_memory.squirrel.memory.ranking as ranking
from reos_memory.errors import InvalidInput
from reos_memory.models import Memory, MemoryMetrics, now_iso
from reos_memory.squirrel import api
from reos_memory.squirrel.memory.gather import Hits, gather
from reos_memory.squirrel.memory.policy import Policy
from reos_memory.squirrel.redaction import redact
from reos_memory.store import keywords as kw_sql
from reos_memory.store.team import memories as pgsql
from reos_memory.team.memories import TeamMemories, Who, no_root, reach, to_memory, to_metrics

KEYWORD_HITS = 50


class TeamRetrieval:
    def __init__(self, memories: TeamMemories) -> None:
        self.memories = memories

    @property
    def policy(self) -> Policy:
        return self.memories.policy

    def search(self, who: Who, p: api.SquirrelSearchParams) -> api.SquirrelSearchResult:
        """Team and org memories matching a query, ranked as get_task_context ranks them;
        nothing is counted or recorded."""
        no_root(p.project_root)
        qvec = self.memories.embed(p.query)
        with self.memories.tenant(who) as conn:
            owner = self.memories.owner_filter(conn, who, p.owner_type, p.owner_id)
            filters = pgsql.Filters(
                project_id=p.project_id,
                include_global=p.include_global,
                statuses=tuple(p.statuses),
                kinds=None if p.kinds is None else tuple(p.kinds),
                owner=owner,
            )
            scope = self._scope(p.project_id, p.path, tuple(p.statuses), p.include_global)
            scope.kinds = None if p.kinds is None else tuple(p.kinds)
            cands, used = self._candidates(
                conn, who, filters, scope, p.query, qvec, key_lookup=False
            )
        return api.SquirrelSearchResult(
            query=p.query,
            matches=ranking.search_matches(cands, self.policy, p.limit),
            semantic_available=used,
        )

    def get_task_context(
        self, who: Who, p: api.ContextParams, *, relevant_only: bool = False
    ) -> api.ContextResult:
        """The team and org memories for one task within its budget, recorded (an opportunity
        for every eligible memory, a use for every one given) for team CR-Memory."""
        no_root(p.project_root)
        if p.project_id is None:
            raise InvalidInput("project_id", "the project's id (the team server has no files)")
        qvec = self.memories.embed(p.task)
        dropped: list[ranking.Dropped] = []
        with self.memories.tenant(who) as conn:
            owner = self.memories.owner_filter(conn, who, p.owner_type, p.owner_id)
            filters = pgsql.Filters(project_id=p.project_id, owner=owner)
            scope = self._scope(p.project_id, p.path, ranking.LIVE, True)
            cands, used = self._candidates(
                conn, who, filters, scope, p.task, qvec,
                key_lookup=True, floor_first=True, dropped=dropped,
            )  # fmt: skip
            given: set[str] = set()
            if p.exclude_injected and p.session_id:
                given = pgsql.given_in_session(conn, who.org_id, who.key_id, p.session_id)
            choice = ranking.choose(
                cands,
                self.policy,
                context_id=f"tctx-{uuid.uuid4().hex[:20]}",
                budget=p.context_budget_tokens,
                vectors_used=used,
                relevant_only=relevant_only,
                given=given,
                dropped=dropped,
            )
            out = choice.result
            if p.dry_run:  # a preview: nothing counted or kept
                return out
            pgsql.insert_context(
                conn,
                {
                    "org_id": who.org_id,
                    "id": out.context_id,
                    "team_id": who.team_id,
                    "key_id": who.key_id,
                    "project_id": p.project_id,
                    "session_id": p.session_id,
                    "task": redact(p.task[:2000]),
                    "memory_ids": out.memory_ids,
                    "tokens": out.tokens,
                },
            )
            eligible = [c.memory.id for c in choice.eligible]
            pgsql.count_given(conn, who.org_id, eligible, out.memory_ids)
            # the key received these: its evidence of their use (team CR-Memory counts keys)
            pgsql.note_reporter(conn, who.org_id, who.key_id, out.memory_ids)
        return out

    def _scope(
        self,
        project_id: str | None,
        path: str | None,
        statuses: tuple[str, ...],
        include_global: bool,
    ) -> ranking.Scope:
        """The local visibility rule over the rows the query returned (expiry, repo_path
        prefixes): owners are already the key's reach."""
        return ranking.Scope(
            project_id=project_id,
            owners=None,
            path=path,
            include_global=include_global,
            statuses=statuses,
            protected=self.policy.protected_kinds,
        )

    def _candidates(
        self,
        conn: psycopg.Connection,
        who: Who,
        filters: pgsql.Filters,
        scope: ranking.Scope,
        query: str,
        qvec: str | None,
        *,
        key_lookup: bool,
        floor_first: bool = False,
        dropped: list[ranking.Dropped] | None = None,
    ) -> tuple[list[ranking.Candidate], bool]:
        """`gather` over the team store: the same candidates as the local service's."""
        src = _Team(self.memories, conn, who, filters, qvec)
        return gather(
            src, query, scope, self.policy, now_iso(),
            key_lookup=key_lookup, floor_first=floor_first, dropped=dropped,
        )  # fmt: skip


class _Team:
    """One request's view of the team store, for `gather`: the rows of the key's reach."""

    def __init__(
        self,
        memories: TeamMemories,
        conn: psycopg.Connection,
        who: Who,
        filters: pgsql.Filters,
        qvec: str | None,
    ) -> None:
        self.memories = memories
        self.conn = conn
        self.who = who
        self.reach = reach(who)
        self.filters = filters
        self.qvec = qvec

    def hits(self, query: str, *, key_lookup: bool) -> Hits:
        conn, rch, filters = self.conn, self.reach, self.filters
        r = self.memories.policy.retrieval
        near: dict[str, float] = {}
        if self.qvec is not None:
            near = dict(self.memories.nearest(conn, rch, filters, self.qvec, r.candidates))
        words = kw_sql.query_words(query)
        # as locally: full text scores the rarest words' postings within a budget
        all_dfs = pgsql.document_frequencies(conn, rch, words)
        kept = kw_sql.fit_postings(words, all_dfs, ranking.KEYWORD_POSTINGS)[0]
        kw = pgsql.keyword_hits(
            conn, rch, filters, kept, KEYWORD_HITS, scan=ranking.KEYWORD_POSTINGS, among=list(near)
        )
        df_of = dict(zip(words, all_dfs, strict=True))
        total = 0
        if kw:
            total = self.memories.counts.get(("total", rch), lambda: pgsql.live_total(conn, rch))
        keyed: set[str] = set()
        guards: set[str] = set()
        if key_lookup and filters.project_id is not None:
            keyed, guards = pgsql.keyed_and_guards(conn, rch, filters.project_id)
        return Hits(
            near, kw, kept, [df_of[w] for w in kept], total, keyed, guards, self.qvec is not None
        )

    def similarities(self, ids: list[str]) -> dict[str, float]:
        assert self.qvec is not None
        return dict(pgsql.similarities(self.conn, self.who.org_id, self.qvec, ids))

    def words_held(self, words: list[str], ids: list[str]) -> dict[str, list[str]]:
        return dict(pgsql.words_held(self.conn, self.who.org_id, words, ids))

    def rows(self, ids: list[str]) -> tuple[dict[str, Memory], dict[str, MemoryMetrics]]:
        rows = pgsql.get_many(self.conn, self.reach, ids)
        metrics = pgsql.metrics_of(self.conn, self.who.org_id, ids)
        mems: dict[str, Memory] = {mid: to_memory(row) for mid, row in rows.items()}
        # a memory without metrics yet gets empty ones in `gather.build`, as locally
        found = {mid: to_metrics(row, mid) for mid, row in metrics.items() if mid in mems}
        return mems, {mid: m for mid, m in found.items() if m is not None}
