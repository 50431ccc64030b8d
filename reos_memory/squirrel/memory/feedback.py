"""Outcome feedback and regret (seed 001 section 4.2).

The outcome of a task that received a context (errors, retries) is compared with the project's
running averages. Fewer errors or retries than usual give every memory injected into that
context a suspected regret hit and `estimated_regret_saved += alpha * d_err + beta * d_retry`;
then the averages take the outcome in. A context is judged once, by an explicit
`squirrel/feedback` or by the next episode of the same session, whichever comes first.
"""

from __future__ import annotations

from typing import Any

import apsw

from reos_memory.errors import NotFound
from reos_memory.models import EpisodeStats
from reos_memory.squirrel.api import FeedbackParams, FeedbackResult
from reos_memory.squirrel.memory.policy import RegretWeights
from reos_memory.store import contexts as context_sql
from reos_memory.store import memories as memory_sql
from reos_memory.store import projects as project_sql


def judge(
    base: tuple[int, float, float], errors: int, retries: int, regret: RegretWeights
) -> tuple[float, str | None]:
    """The regret a task's outcome says its memories saved, against the project's running
    averages `base` (outcomes seen, average errors, average retries); 0 and why when none."""
    n, avg_err, avg_retry = base
    d_err = max(0.0, avg_err - errors)
    d_retry = max(0.0, avg_retry - retries)
    if n == 0:
        return 0.0, "no baseline yet for this project: the outcome starts it"
    if d_err == 0 and d_retry == 0:
        return 0.0, "no fewer errors or retries than the project's average"
    return regret.alpha_errors * d_err + regret.beta_retries * d_retry, None


def outcome_of(p: FeedbackParams) -> dict[str, Any]:
    """A reported task outcome as the contexts store it."""
    return {
        "errors": p.errors,
        "retries": p.retries,
        "tests_final_status": p.tests_final_status,
        "user_frustration": p.user_frustration,
    }


def reply(
    context_id: str,
    memory_ids: list[str],
    base: tuple[int, float, float],
    *,
    counted: bool,
    hit: bool = False,
    saved: float = 0.0,
    why: str | None = None,
) -> FeedbackResult:
    """The reply to a reported outcome, locally and on the team server: whether it counted,
    the regret hit it gave the context's memories, and the project's baseline (outcomes,
    average errors, average retries) it was judged against."""
    return FeedbackResult(
        context_id=context_id,
        counted=counted,
        regret_hit=hit,
        regret_saved=round(saved, 4) if hit else 0.0,
        memory_ids=memory_ids,
        baseline={
            "outcomes": base[0],
            "avg_errors": round(base[1], 4),
            "avg_retries": round(base[2], 4),
        },
        reason=(None if hit else why) if counted else "this context already has its outcome",
    )


def apply(
    conn: apsw.Connection,
    context_id: str,
    outcome: dict[str, Any],
    regret: RegretWeights,
    now: str,
    source: str,
    *,
    update_baseline: bool = True,
) -> FeedbackResult:
    """Judge one context by a task outcome (inside a write tx); counts once per context."""
    ctx = context_sql.get_context(conn, context_id)
    if ctx is None:
        raise NotFound("context", context_id, field="context_id")
    project_id = ctx["project_id"]
    base = project_sql.baseline(conn, project_id)
    if not context_sql.set_feedback(conn, context_id, now, source, outcome):
        return reply(context_id, [], base, counted=False)
    mems = context_sql.injected_memories(conn, context_id)
    saved, why = judge(base, outcome["errors"], outcome["retries"], regret)
    hit = saved > 0 and bool(mems)
    if hit:
        memory_sql.add_regret(conn, mems, saved)
    if update_baseline and project_id is not None:
        project_sql.add_outcome(conn, project_id, outcome["errors"], outcome["retries"], now)
    return reply(context_id, mems, base, counted=True, hit=hit, saved=saved, why=why)


def judge_session_contexts(
    conn: apsw.Connection,
    project_id: str,
    session_id: str,
    st: EpisodeStats,
    until: str,
    regret: RegretWeights,
    now: str,
) -> int:
    """An episode just ended: it is the outcome of the contexts its session received before.

    However many contexts the task received (a hook may ask on every prompt), it is one task:
    each memory injected into any of them gets at most one regret hit, and the project's
    averages take the outcome in once.
    """
    ids = context_sql.contexts_awaiting_feedback(conn, session_id, until)
    if not ids:
        return 0
    outcome = {
        "errors": st.error_count,
        "retries": st.retry_loops,
        "tests_final_status": st.tests_final_status,
        "user_frustration": st.user_frustration,
    }
    n, avg_err, avg_retry = project_sql.baseline(conn, project_id)
    judged = 0
    mems: dict[str, None] = {}
    for cid in ids:
        if context_sql.set_feedback(conn, cid, now, "episode", outcome):
            judged += 1
            mems.update(dict.fromkeys(context_sql.injected_memories(conn, cid)))
    d_err = max(0.0, avg_err - st.error_count)
    d_retry = max(0.0, avg_retry - st.retry_loops)
    if judged and n > 0 and (d_err > 0 or d_retry > 0) and mems:
        memory_sql.add_regret(
            conn, list(mems), regret.alpha_errors * d_err + regret.beta_retries * d_retry
        )
    if judged:
        project_sql.add_outcome(conn, project_id, st.error_count, st.retry_loops, now)
    return judged
