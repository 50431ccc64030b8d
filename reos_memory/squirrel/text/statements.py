"""Explicit rules and corrections in a developer's messages, found by regexes instead of an LLM.

Squirrel's offline writer turns what a user says outright ("from now on use pnpm, never npm",
"no, use httpx", "don't apologize") into candidate memories. Precision beats recall here: a junk
memory is injected into every later task, a missed one costs one more repetition. So a clause
becomes a statement only when it carries a durable cue (always, never, from now on, we use ...,
our X is ..., note that ..., a prohibition that opens its sentence) or, in a correction, names a
concrete tool, command or location. Questions, hypotheticals, remarks about the past, one-off task
limits ("for now", "in this PR"), quoted text and code are ignored.

A message is split into clauses (`clauses`); each clause is read for a rule (`clause_rules`, from
its opening words in `rule_openings`, its scope in `rule_scope`, the passing remarks turned away
in `passing_remarks`, how the user wants the assistant to talk in `interaction_prefs`, the tools it
names in `tool_names`); this module merges a message's tool choices into one statement per slot.
Everything here is pure and cheap: precompiled regexes, no I/O, no model.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace

from reos_memory.squirrel.text.clause_rules import DIRECTIVE_WORDS, Hit, content_words, parse_clause
from reos_memory.squirrel.text.clauses import split_clauses
from reos_memory.squirrel.text.tool_names import CATEGORY_PHRASE, TOOL_CATEGORIES, mentioned_tools

EXPLICIT = "explicit_statement"  # Statement.source values, as in the seed's evidence table
CORRECTION = "user_correction"


@dataclass(frozen=True)
class Statement:
    """One memory candidate derived from a user's words."""

    text: str
    kind: str  # preference | invariant | pattern | guard | note
    polarity: int  # -1 for a prohibition ("never X"), +1 otherwise
    scope: str  # global | project
    key: str | None  # slot such as "project.package_manager" or "user.pref.concise"
    source: str  # explicit_statement | user_correction
    tools: tuple[str, ...]


_TOKEN_RE = re.compile(r"[a-z0-9_]+")


def _tool_key(pos: list[str], scope: str) -> str | None:
    cats = {TOOL_CATEGORIES[t] for t in pos}
    if len(cats) != 1:
        return None
    return ("user.pref." if scope == "global" else "project.") + cats.pop()


# --- a whole message --------------------------------------------------------------------------


def _render_tools(
    cat: str, pos: list[str], neg: list[str], never: bool, strong: bool, pref: bool, scope: str
) -> str:
    where = "in all projects" if scope == "global" else "in this project"
    phrase = CATEGORY_PHRASE[cat]
    if not pos:
        return f"{'Never use' if never else 'Do not use'} {' or '.join(neg)} {where}."
    verb = "Prefer" if pref else "Use"
    chosen = " and ".join(pos)
    if neg and strong:
        return f"{verb} {chosen} {phrase} {where}; never use {' or '.join(neg)}."
    if neg:
        joiner = "over" if pref else "instead of"
        return f"{verb} {chosen} {joiner} {' or '.join(neg)} {phrase} {where}."
    return f"{verb} {chosen} {phrase} {where}."


def _merge_tools(
    cat: str, scope: str, group: list[Hit], correction: bool, rejected_tools: tuple[str, ...]
) -> tuple[Statement, bool]:
    """One statement for a message's plain choices in one category; (it, mentions rejection)."""
    pos: list[str] = []
    neg: list[str] = []
    tools: list[str] = []
    for h in group:
        pos += [t for t in h.pos if t not in pos]
        neg += [t for t in h.neg if t not in neg]
        tools += [t for t in h.tools if t not in tools]
    strong = any(h.strong for h in group)
    pref = any(h.pref for h in group)
    from_rejection = False
    if correction and pos:
        for t in rejected_tools:
            if TOOL_CATEGORIES[t] == cat and t not in pos and t not in neg:
                neg.append(t)
                from_rejection = True
    pos = [t for t in pos if t not in neg]
    tools += [t for t in neg if t not in tools]
    polarity = -1 if strong or not pos else 1
    if polarity == -1 or (correction and neg):
        kind = "guard"  # it records what the assistant must not do (again)
    elif pref or scope == "global":
        kind = "preference"
    else:
        kind = "invariant"
    never = any(h.never for h in group)
    text = _render_tools(cat, pos, neg, never, strong, pref, scope)
    uses_rejection = from_rejection or any(t in rejected_tools for t in tools)
    source = CORRECTION if correction else EXPLICIT
    key = _tool_key(pos, scope)
    return Statement(text, kind, polarity, scope, key, source, tuple(tools)), uses_rejection


def _short(command: str) -> str:
    command = " ".join(command.split()).replace("`", "'")
    return command if len(command) <= 80 else command[:77] + "..."


@dataclass(frozen=True)
class _Rejection:
    """The tool call the user just turned down, as a correction reads it (all empty without one)."""

    input: str  # what the call would have run or written ("npm install")
    words: frozenset[str]  # the words of that input
    tools: tuple[str, ...]  # the catalog tools it names
    note: str  # " (the user rejected `npm install`)", added to the statements about it


_NO_REJECTION = _Rejection("", frozenset(), (), "")


def _rejection(rejected_tool: str | None, rejected_input: str | None) -> _Rejection:
    if rejected_input:
        words = frozenset(_TOKEN_RE.findall(rejected_input.lower()))
        note = f" (the user rejected `{_short(rejected_input)}`)"
        return _Rejection(rejected_input, words, tuple(mentioned_tools(rejected_input)), note)
    if rejected_tool:
        note = f" (the user rejected a {_short(rejected_tool)} call)"
        return _Rejection("", frozenset(), (), note)
    return _NO_REJECTION  # an explicit statement, or a correction typed in the chat


_Slot = tuple[str, str]  # (tool category, scope): the plain tool choices merged into one statement


def _collect(
    text: str,
    correction: bool,
    rejected_tool: str | None = None,
    rejected_input: str | None = None,
) -> list[Statement]:
    rejection = _rejection(rejected_tool, rejected_input)
    clauses = split_clauses(text, rejection.words)
    hits = [h for cl in clauses if (h := parse_clause(cl, correction)) is not None]
    slots, groups = _slots(hits, rejection)
    source = CORRECTION if correction else EXPLICIT
    out: list[Statement] = []
    for slot in slots:
        if isinstance(slot, Hit):
            s, shared = _statement(slot, source, rejection)
        elif all(h.tentative for h in groups[slot]):
            continue
        else:
            s, shared = _merge_tools(*slot, groups[slot], correction, rejection.tools)
        if rejection.note and shared:
            s = replace(s, text=s.text[:-1] + rejection.note + ".")
        out.append(s)
    return _unique(out)


def _slots(
    hits: list[Hit], rejection: _Rejection
) -> tuple[list[_Slot | Hit], dict[_Slot, list[Hit]]]:
    """The hits in message order, except that plain tool choices of one category ("use pnpm",
    "never npm") share one slot, placed where the first of them was said."""
    rejected_cats = {TOOL_CATEGORIES[t] for t in rejection.tools}
    groups: dict[_Slot, list[Hit]] = {}
    slots: list[_Slot | Hit] = []
    for hit in hits:
        if hit.needs_rejection and not rejection.note:
            continue  # "use the other helper instead" means nothing without the rejected call
        cat = TOOL_CATEGORIES[(hit.pos + hit.neg)[0]] if hit.simple else ""
        if hit.simple and hit.instead and rejection.input and cat not in rejected_cats:
            # "use uv run instead" after `python -m pytest`: about that call, not the uv slot
            hit.simple = False
            hit.kind = "guard"
        if hit.simple:
            gkey = (cat, hit.scope)
            if gkey not in groups:
                groups[gkey] = []
                slots.append(gkey)
            groups[gkey].append(hit)
        else:
            slots.append(hit)
    return slots, groups


def _statement(hit: Hit, source: str, rejection: _Rejection) -> tuple[Statement, bool]:
    """The statement of one hit; and whether it speaks of the rejected call."""
    s = Statement(hit.text, hit.kind, hit.polarity, hit.scope, hit.key, source, tuple(hit.tools))
    shared = hit.instead or any(t in rejection.tools for t in hit.tools)
    if not shared:
        shared = not rejection.words.isdisjoint(content_words(hit.text.lower(), DIRECTIVE_WORDS))
    return s, shared


def _unique(statements: list[Statement]) -> list[Statement]:
    """The statements without repeats of a text (case aside), first one kept."""
    seen: set[str] = set()
    unique = []
    for s in statements:
        if s.text.lower() not in seen:
            seen.add(s.text.lower())
            unique.append(s)
    return unique


def explicit_statements(text: str) -> list[Statement]:
    """Rules the user states outright in a message ("from now on ...", "never ...", "we use X")."""
    return list(_explicit(text))


@functools.lru_cache(maxsize=256)  # the pre-filter and then the writer read the same messages
def _explicit(text: str) -> tuple[Statement, ...]:
    return tuple(_collect(text, False))


def corrections(
    text: str, rejected_tool: str | None = None, rejected_input: str | None = None
) -> list[Statement]:
    """Instructions in a message that corrects the assistant, optionally after a rejected call.

    `rejected_tool`/`rejected_input` describe the tool call the user just turned down ("Bash",
    "npm install"); a catalog tool in the input of the same category as the user's choice is
    recorded as the one to avoid, and a statement about that call says so in parentheses. A bare
    "no" or "stop" yields nothing: without an instruction there is nothing durable to remember.
    """
    return _collect(text, True, rejected_tool, rejected_input)
