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
from reos_memory.models import MemoryMetrics, now_iso
from reos_memory.squirrel import api
from reos_memory.squirrel.memory.policy import Policy
from reos_memory.squirrel.redaction import redact
from reos_memory.store import keywords as kw_sql
from reos_memory.store.team import memories as msql
from reos_memory.team.memories import TeamMemories, Who, no_root, reach, to_memory, to_metrics

KEYWORD_HITS = 50


class Found:
    """The candidates of one request, and whether vectors found them."""

    def __init__(self, cands: list[ranking.Candidate], used_vectors: bool) -> None:
        self.cands = cands
        self.used_vectors = used_vectors


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
            filters = msql.Filters(
                project_id=p.project_id,
                include_global=p.include_global,
                statuses=tuple(p.statuses),
                kinds=None if p.kinds is None else tuple(p.kinds),
                owner=owner,
            )
            scope = self._scope(p.project_id, p.path, tuple(p.statuses), p.include_global)
            scope.kinds = None if p.kinds is None else tuple(p.kinds)
            found = self._candidates(conn, who, filters, scope, p.query, qvec, key_lookup=False)
        return api.SquirrelSearchResult(
            query=p.query,
            matches=ranking.search_matches(found.cands, self.policy, p.limit),
            semantic_available=found.used_vectors,
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
            filters = msql.Filters(project_id=p.project_id, owner=owner)
            scope = self._scope(p.project_id, p.path, ranking.LIVE, True)
            found = self._candidates(
                conn, who, filters, scope, p.task, qvec, key_lookup=True, dropped=dropped
            )
            given: set[str] = set()
            if p.exclude_injected and p.session_id:
                given = msql.given_in_session(conn, who.org_id, who.key_id, p.session_id)
            choice = ranking.choose(
                found.cands,
                self.policy,
                context_id=f"tctx-{uuid.uuid4().hex[:20]}",
                budget=p.context_budget_tokens,
                vectors_used=found.used_vectors,
                relevant_only=relevant_only,
                given=given,
                dropped=dropped,
            )
            out = choice.result
            if p.dry_run:  # a preview: nothing counted or kept
                return out
            msql.insert_context(
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
            msql.count_given(
                conn, who.org_id, [c.memory.id for c in choice.eligible], out.memory_ids
            )
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
        filters: msql.Filters,
        scope: ranking.Scope,
        query: str,
        qvec: str | None,
        *,
        key_lookup: bool,
        dropped: list[ranking.Dropped] | None = None,
    ) -> Found:
        r = self.policy.retrieval
        rch = reach(who)
        near: dict[str, float] = {}
        if qvec is not None:
            near = dict(self.memories.nearest(conn, rch, filters, qvec, r.candidates))
        words = kw_sql.query_words(query)
        # as locally: full text scores the rarest words' postings within a budget
        dfs = msql.document_frequencies(conn, rch, words)
        kept = kw_sql.fit_postings(words, dfs, ranking.KEYWORD_POSTINGS)[0]
        kw = msql.keyword_hits(
            conn, rch, filters, kept, KEYWORD_HITS, scan=ranking.KEYWORD_POSTINGS, among=list(near)
        )
        distinct: list[str] = []
        if kw:  # among the searched words only
            total = self.memories.counts.get(("total", rch), lambda: msql.live_total(conn, rch))
            df_of = dict(zip(words, dfs, strict=True))
            distinct = ranking.distinctive(
                kept, [df_of[w] for w in kept], total, r.distinctive_share
            )
        keyed: set[str] = set()
        guards: set[str] = set()
        if key_lookup and filters.project_id is not None:
            keyed, guards = msql.keyed_and_guards(conn, rch, filters.project_id)
        ids = list(dict.fromkeys([*keyed, *guards, *near, *kw]))
        if qvec is not None:
            missing = [i for i in ids if i not in near]
            near.update(msql.similarities(conn, who.org_id, qvec, missing))
        shared = msql.words_held(conn, who.org_id, distinct, list(kw)) if distinct else {}
        rows = msql.get_many(conn, rch, ids)
        metrics = msql.metrics_of(conn, who.org_id, ids)
        rel = ranking.relative(kw)
        now = now_iso()
        cands = []
        for mid in ids:
            row = rows.get(mid)
            if row is None:
                continue
            m = to_memory(row)
            why_not = ranking.hidden(m, scope, now)
            if why_not is not None:
                if dropped is not None:
                    dropped.append(
                        ranking.Dropped(
                            mid, "filtered", why_not, near.get(mid), rel.get(mid, 0.0), []
                        )
                    )
                continue
            cands.append(
                ranking.candidate(
                    m,
                    to_metrics(metrics.get(mid), mid) or MemoryMetrics(memory_id=mid),
                    self.policy,
                    cos=near.get(mid),
                    keyword=rel.get(mid, 0.0),
                    by_key=mid in keyed,
                    emergency=mid in guards,
                    shared=shared.get(mid, []),
                )
            )
        return Found(cands, qvec is not None)
