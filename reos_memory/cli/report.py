"""Human-readable output of the `sqrl` commands (the JSON output is the protocol's result)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reos_memory.squirrel.token_count import shorten

if TYPE_CHECKING:
    from reos_memory.json_types import JSONMapping
    from reos_memory.models import Memory, MemoryMetrics
    from reos_memory.squirrel import api


def memories(rows: list[Memory], metrics: list[MemoryMetrics | None]) -> str:
    """One line per memory: id, status, kind, tier, uses/opportunities, text."""
    if not rows:
        return "no memories\n"
    lines = [f"{'id':<25} {'status':<11} {'kind':<10} {'tier':<10} {'used':>9}  text"]
    for m, x in zip(rows, metrics, strict=True):
        used = f"{x.use_count}/{x.opportunities}" if x is not None else "-"
        key = f"[{m.key}] " if m.key else ""
        lines.append(
            f"{m.id:<25} {m.status:<11} {m.kind:<10} {m.tier:<10} {used:>9}  "
            + shorten(key + m.text, 90)
        )
    return "\n".join(lines) + "\n"


def memory(result: api.MemoryGetResult) -> str:
    """One memory in full, with where it came from and how it has done."""
    m, x = result.memory, result.metrics
    where = "global" if m.project_id is None else f"project {m.project_id}"
    if m.path_prefix:
        where += f", under {m.path_prefix}"
    lines = [
        f"{m.id}  {m.status} {m.kind} ({m.tier}{', avoid' if m.polarity < 0 else ''})",
        f"  {m.text}",
        f"  key: {m.key or '-'}   scope: {m.scope}, {where}   owner: {m.owner_type} {m.owner_id}",
        f"  created {m.created_at}, updated {m.updated_at}, expires {m.expires_at or 'never'},"
        f" confidence {m.confidence if m.confidence is not None else '-'}",
    ]
    if x is not None:
        lines.append(
            f"  used {x.use_count} of {x.opportunities} opportunities, last {x.last_used_at or 'never'};"
            f" regret hits {x.suspected_regret_hits}, saved {x.estimated_regret_saved:.2f}"
        )
    ev = result.evidence
    lines.append(f"  evidence ({len(ev)}):")
    for e in ev:
        lines.append(
            f"    {e.created_at}  episode {e.episode_id}  {e.source or '-'}"
            + (f"  frustration {e.frustration}" if e.frustration else "")
        )
    return "\n".join(lines) + "\n"


def episodes(result: api.FlushResult) -> str:
    """What a flush or ingest cut and what the writer made of each episode."""
    eps = result.episodes
    if not eps:
        return "nothing to flush: no pending events\n"
    out = []
    for e in eps:
        st = e.stats
        out.append(
            f"episode {e.episode_id} ({e.cut_reason}, {e.events} events,"
            f" {st.get('error_count', 0)} errors, {st.get('retry_loops', 0)} retries,"
            f" frustration {st.get('user_frustration', 'none')}): {e.outcome}"
            + (f" - {e.reason}" if e.reason else "")
        )
        for op in e.ops or []:
            what = op.get("text") or op.get("reason") or ""
            out.append(f"  {op['action']:<12} {op.get('kind') or '':<10} {shorten(what, 90)}")
    return "\n".join(out) + "\n"


def context(result: api.ContextResult) -> str:
    left = len(result.dropped)
    left_out = f"; {left} more looked at and left out (--json says why)" if left else ""
    team = result.team
    if team is not None and team.status == "offline":
        left_out += (
            f"; the team server is offline ({team.error}): team memories from the cache of"
            f" {team.last_pull_at or 'never'}"
        )
    if not result.context_prompt:
        return f"no memories for this task ({result.context_id}){left_out}\n"
    return (
        result.context_prompt + f"\n\n{len(result.memory_ids)} memories, {result.tokens} of"
        f" {result.budget} tokens, context {result.context_id}{left_out}\n"
    )


def cr_memory(result: api.CrMemoryResult) -> str:
    head = (
        f"{'dry run: ' if result.dry_run else ''}evaluated {result.evaluated},"
        f" promoted {result.promoted}, deprecated {result.deprecated},"
        f" kept {result.kept} ({result.seconds} s)"
    )
    lines = [head]
    for d in result.decisions:
        if d["action"] != "keep":
            lines.append(f"  {d['action']:<10} {d['memory_id']:<25} {d['kind']:<10} {d['reason']}")
    return "\n".join(lines) + "\n"


def _writer_config(c: JSONMapping) -> str:
    if "problem" in c:
        return f"{c.get('writer')}: {c['problem']}"
    if "model" not in c:
        return str(c.get("provider", "rules (offline)"))
    if "executable" in c:  # the agent's CLI
        found = c.get("executable_found")
        where = f"found at {found}" if found else "NOT found on PATH"
        return (
            f"{c['provider']} {c['model']} via `{c['executable']}` ({where}),"
            f" timeout {c.get('timeout_s')} s"
        )
    key = c.get("api_key_env")
    key_text = (
        f"key in ${key} ({'set' if c.get('api_key_set') else 'NOT set'})" if key else "no key"
    )
    return f"{c['provider']} {c['model']} at {c['base_url']}, {key_text}"


def status(result: api.StatusResult) -> str:
    mem = result.memories["by_status"]
    lines = [
        f"memories: {sum(mem.values())} ("
        + ", ".join(f"{k} {v}" for k, v in sorted(mem.items()))
        + ")",
        "episodes: "
        + (", ".join(f"{k} {v}" for k, v in sorted(result.episodes.items())) or "none"),
        f"pending events: {result.pending_events} in {result.open_sessions} open sessions",
        f"writer: {result.writer}; tokens today {result.tokens_today}"
        f" of {result.writer_daily_token_budget}",
        "writer config: " + _writer_config(result.writer_config),
    ]
    for agent, t in sorted(result.transcripts.items()):
        lines.append(
            f"{agent} logs: {t['files']} file(s), {t['lines']} lines, {t['events']} events,"
            f" {t['malformed']} malformed, {t['ended_sessions']} ended; last read {t['last_read_at']}"
        )
    for day in result.writer_calls_by_day:
        lines.append(
            f"  {day['day']} {day['writer']}: {day['calls']} calls ({day['ok']} ok),"
            f" {day['input_tokens']} in / {day['output_tokens']} out tokens, {day['seconds']} s"
        )
    return "\n".join(lines) + "\n"


def search(result: api.SquirrelSearchResult) -> str:
    if not result.matches:
        return "no match\n"
    return (
        "\n".join(
            f"{m.score:.2f}  {m.id:<25} {m.kind:<10} {shorten(m.text, 90)}" for m in result.matches
        )
        + "\n"
    )


def team_write(tw: api.TeamWrite) -> str:
    """Where a team write stands, in one line."""
    if tw.state == "sent":
        return f"sent to the team server ({tw.method})"
    if tw.state == "refused":
        return f"refused by the team server: {tw.error}"
    why = f" ({tw.error})" if tw.error else ""
    return f"queued: the team server did not answer{why}; `sqrl team sync` sends it"


def share(result: api.ShareResult) -> str:
    return f"{result.memory_id}: {team_write(result.team)}\n"


def team_status(s: api.TeamStatusResult) -> str:
    """The team server, the key (set or not, never shown), the cursor, the outbox."""
    if not s.configured:
        return "no team server configured (team_server_url)\n"
    lines = [
        f"server: {s.server}   API key: {s.api_key}",
        f"org: {s.org_id or '-'}   team: {s.team_id or '-'}   role: {s.role or '-'}",
        f"cursor: {s.last_seq}   last pull: {s.last_pull_at or 'never'}"
        f"   last attempt: {s.last_attempt_at or 'never'}",
        f"cached: {', '.join(f'{n} {k}' for k, n in sorted(s.cached.items())) or 'nothing'}",
        f"outbox: {s.outbox.get('pending', 0)} pending, {s.outbox.get('done', 0)} sent,"
        f" {s.outbox.get('refused', 0)} refused",
    ]
    if s.last_error:
        lines.append(f"last error: {s.last_error}")
    lines += [f"  refused {r.method} ({r.idempotency_key}): {r.last_error}" for r in s.refused]
    return "\n".join(lines) + "\n"


def team_sync(r: api.TeamSyncResult) -> str:
    head = "synced" if r.status == "ok" else f"{r.status}: {r.error}"
    return (
        f"{head}: sent {r.sent}, refused {r.refused}, {r.pending} still queued;"
        f" pulled {r.upserts} change(s), {r.forgets} forgotten, cursor {r.last_seq}"
        + (f", {r.skipped} skipped (not this cache's memories)" if r.skipped else "")
        + (
            "; the server's log no longer held this cache's place (a restored database):"
            " pulled again from the start"
            if r.restarted
            else ""
        )
        + "\n"
    )
