"""The Memory Writer as one LLM call per episode (seed 001 section 2.2).

Input: the compressed episode (summarised down to the input token cap, never sent whole when too
big), its features, the owner, the most similar existing memories of its scope (so the model
can UPDATE or DEPRECATE instead of duplicating), and the policy as the system prompt. Output:
JSON validated with msgspec against the seed's op schema; anything else is a failure that
leaves the episode for a retry.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from reos_memory.llm import Completion, LLMClient, LLMError
from reos_memory.models import Memory
from reos_memory.squirrel.redaction import redact_value
from reos_memory.squirrel.token_count import count_tokens
from reos_memory.squirrel.writer.schema import WriterOutput

SYSTEM_PROMPT = """You are the Memory Writer of Squirrel, the long-term memory of a coding \
assistant. You read ONE episode of a coding session (compressed events and features) and decide \
which memories, if any, will help the assistant in FUTURE tasks of this project or user.

Objectives: reduce repeated debugging, repeated explanations and rediscovering project \
invariants. Constraints: never store secrets, credentials or raw logs; write each memory as 1-2 \
self-contained sentences a future assistant can act on; prefer no memory over a vague one; \
never restate what any developer already knows.

Memory kinds: preference (how the user wants things done), invariant (a stable project fact or \
decision), pattern (a reusable debugging or design lesson: what failed, why, what worked), \
guard (a risk rule: "don't do X", "ask before Y"; polarity -1), note (a lightweight hypothesis). \
Tiers: short_term (default for new lessons), long_term (stated explicitly by the user), \
emergency (a high-severity guard that should change what tools are run). Scope: project \
(default), global (the user's habits across projects), repo_path (only a sub-tree: give \
path_prefix). key: optional dotted slot name such as "project.http_client" or \
"user.pref.ask_before_delete"; reuse an existing memory's key to replace it.

An event's `key_sentences` are the sentences of its message that read most like a lesson, each with the score of a small model (0-1): read them first, judge them yourself.

`reading` is what a rule-based reader found in the episode: `candidates`, the memories it would write, each with its source (user_correction and explicit_statement: the user's words, written with what they answered, such as the call a rejection refused; failure_then_success: an error and the change after which it went away; agent_diagnosis: a cause the agent named; session_summary: a finding of a compaction summary; project_command: the commands that passed), and `turned_away`, candidates it dropped with the reason. Weigh them as evidence: keep, rewrite, merge or drop each; they are not the answer, and the events decide.

Write each memory as a lesson addressed to a future session, not as a quote of the chat: a rule ("Use X for Y, not Z.") or a fact with its cause ("X fails when Y because Z; do W."), in plain declarative or imperative form, with its subject named (never a dangling "it", "this" or "the field"), without conversational openers, hedges, questions or first/second person. Write what the session decided, never a proposal that lost: follow a suggestion to its outcome (taken, argued against, reverted) and read the end of the session (summary, commit message, tests passing after the change) to tell a confirmed diagnosis from an abandoned guess. A request for work now ("update the changelog") is not a rule. Name files relative to the project, never a home directory. For a command that failed and a variant that passed, keep the variant.

If an existing memory already says it, do not ADD it again. If an existing memory is now wrong, \
UPDATE it (give its memory_id or key) or DEPRECATE it (memory_id).

Answer with ONE JSON object and nothing else:
{"ops": [{"op": "ADD"|"UPDATE"|"DEPRECATE", "scope": "project"|"global"|"repo_path", \
"owner_type": "user"|"team"|"org", "owner_id": str, "kind": str, "tier": str, "polarity": 1|-1, \
"key": str|null, "text": str, "ttl_days": int|null, "confidence": 0.0-1.0, \
"memory_id": str|null, "path_prefix": str|null}], \
"episode_evidence": {"episode_id": str, "source": "failure_then_success"|"user_correction"|\
"explicit_statement", "frustration": "none"|"mild"|"moderate"|"severe"}}
Return {"ops": []} when nothing is worth remembering."""

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def build_prompt(
    episode: dict[str, Any],
    existing: list[Memory],
    owner: tuple[str, str],
    policy_text: str,
    max_input_tokens: int,
    reading: dict[str, Any] | None = None,
) -> tuple[str, str, dict[str, Any]]:
    """(system, user, report): the user message fits `max_input_tokens` with the system prompt.
    `reading`: the rules' reading of the episode (`offline.reading`), sent beside its events and
    kept while they are cut, dropped only when nothing else would fit."""
    system = SYSTEM_PROMPT + "\n\nThe memory policy in force (TOML):\n" + policy_text.strip()
    memories = [
        {
            "memory_id": m.id,
            "kind": m.kind,
            "tier": m.tier,
            "status": m.status,
            "scope": m.scope,
            "key": m.key,
            "text": m.text,
        }
        for m in existing
    ]
    events = [_slim(e) for e in episode["events"]]
    budget = max_input_tokens - count_tokens(system)
    fitted = {} if reading is None else {"reading": _fit_reading(reading, budget // READING_SHARE)}
    body: dict[str, Any] = {
        "episode_id": episode["id"],
        "project_id": episode["project_id"],
        "owner": {"owner_type": owner[0], "owner_id": owner[1]},
        "features": episode["stats"],
        "existing_memories": memories,
        **fitted,
        "events": events,
    }
    report = {"events": len(events), "summarised": False, "omitted_events": 0}
    user = _dump(body)
    if count_tokens(user) <= budget:
        return system, user, report
    # Summarise down, what matters most kept longest: the user's own words (requests,
    # corrections, rejections) and the compaction summaries first, then errors, then the rest.
    # Never send more than the cap.
    report["summarised"] = True
    rank = [_priority(e) for e in events]
    kept = list(range(len(events)))

    def render() -> str:
        body["events"] = _with_gaps(events, kept)
        report["omitted_events"] = len(events) - len(kept)
        return _dump(body)

    for e, r in zip(events, rank, strict=True):  # snippets of ordinary events first
        if r == 0:
            e.pop("raw_snippet", None)
    user = render()
    for level, limit in ((0, 160), (1, 160)):  # then the texts of the lesser events
        if count_tokens(user) <= budget:
            break
        for e, r in zip(events, rank, strict=True):
            if r == level:
                _shorten(e, limit)
        user = render()
    for level in (0, 1):  # then those events, from the middle (the start and end stay)
        while count_tokens(user) > budget and any(rank[i] == level for i in kept):
            drop = _middle_third([i for i in kept if rank[i] == level])
            kept = [i for i in kept if i not in drop]
            user = render()
    for limit in (600, 160):  # then the first-priority texts themselves
        if count_tokens(user) <= budget:
            break
        for i in kept:
            _shorten(events[i], limit)
        user = render()
    while count_tokens(user) > budget and len(kept) > 2:
        drop = _middle_third(kept)
        kept = [i for i in kept if i not in drop]
        user = render()
    if count_tokens(user) > budget and reading is not None:
        # the events come first: without the reading, they may fit as they are
        return build_prompt(episode, existing, owner, policy_text, max_input_tokens)
    if count_tokens(user) > budget:
        body["existing_memories"] = memories[:3]
        kept = kept[:1]
        user = render()
    if count_tokens(user) > budget:
        raise LLMError(
            f"the episode cannot be summarised under writer_max_input_tokens={max_input_tokens}"
        )
    return system, user, report


READING_SHARE = 4  # the rules' reading takes at most a quarter of the input budget


def _fit_reading(reading: dict[str, Any], cap: int) -> dict[str, Any]:
    """The reading within `cap` tokens: the candidates turned away go first, then the last
    candidates."""
    out = {
        "candidates": list(reading.get("candidates", [])),
        "turned_away": list(reading.get("turned_away", [])),
    }
    while count_tokens(_dump(out)) > cap and (out["turned_away"] or out["candidates"]):
        (out["turned_away"] or out["candidates"]).pop()
    return out


def _priority(e: dict[str, Any]) -> int:
    """2: the user's words (a request, a correction, a rejected call) and compaction summaries
    (events of `origin` compaction, their errors-and-fixes kept as `notes`); 1: errors, failed
    tests, the agent's diagnoses (`notes` of its messages) and its messages holding a sentence
    the lesson model scored high (`key_sentences`); 0: the rest."""
    if e.get("role") == "user" or e.get("rejected") or e.get("correction"):
        return 2
    if e.get("origin") == "compaction":
        return 2
    if e.get("error") or e.get("test") == "failed" or e.get("notes") or e.get("key_sentences"):
        return 1
    return 0


def _shorten(e: dict[str, Any], limit: int) -> None:
    for f in ("raw_snippet", "text", "summary", "command"):
        if isinstance(e.get(f), str) and len(e[f]) > limit:
            e[f] = e[f][: limit - 3] + "..."


def _middle_third(ids: list[int]) -> set[int]:
    """About a third of `ids` (at least one) around their middle."""
    n = max(1, len(ids) // 3)
    start = (len(ids) - n) // 2
    return set(ids[start : start + n])


def _with_gaps(events: list[dict[str, Any]], kept: list[int]) -> list[dict[str, Any]]:
    """The kept events in order, with a marker where some were left out."""
    out: list[dict[str, Any]] = []
    prev = -1
    for i in kept:
        if i - prev > 1:
            out.append({"omitted": f"{i - prev - 1} events omitted here"})
        out.append(events[i])
        prev = i
    if events and len(events) - 1 - prev > 0:
        out.append({"omitted": f"{len(events) - 1 - prev} events omitted here"})
    return out


def _slim(e: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in e.items() if k not in ("key", "call_id") and v not in (None, "")}


def _dump(body: dict[str, Any]) -> str:
    # redacted again: defence in depth, nothing secret ever goes on the wire
    return json.dumps(redact_value(body), ensure_ascii=False, separators=(",", ":"))


def parse_output(text: str) -> WriterOutput:
    """The validated ops of a reply; raises LLMError naming what was wrong."""
    m = _FENCE.match(text)
    if m:
        text = m.group(1)
    try:
        return msgspec.json.decode(text.strip().encode(), type=WriterOutput)
    except msgspec.ValidationError as exc:
        raise LLMError(f"the writer's output breaks the op schema: {exc}") from None
    except msgspec.DecodeError as exc:
        raise LLMError(f"the writer's output is not JSON: {exc}") from None


def call(client: LLMClient, system: str, user: str, max_output_tokens: int) -> Completion:
    """One provider call (retries and timeouts are the client's)."""
    return client.complete_full(system, user, json_mode=True, max_tokens=max_output_tokens)
