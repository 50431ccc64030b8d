"""The summaries agents write of their own sessions, read as evidence.

Claude Code compacts a long session into a user turn marked `isCompactSummary`, written by its
own model under numbered headings; "Errors and fixes" pairs each problem met with what fixed it
and what the user said about it. Codex writes a `compacted` record with a summary message.
Each entry of such a section becomes one note: its title and its points, in one line.
"""

from __future__ import annotations

import re

from reos_memory.squirrel.text.prose import clip

MAX_CHARS = 400
MAX_NOTES = 8

_HEADING = re.compile(r"^\s*(?:#{1,4}\s*)?(?:\d+[.)]\s*)?\**([A-Z][A-Za-z /&-]{2,40}?)\**\s*:?\s*$")
_WANTED = re.compile(
    r"^(?:errors? and fix(?:es)?|errors? encountered|problems? solved|problem solving|fixes)$", re.I
)
_TOP = re.compile(r"^(\s*)[-*•]\s+(.*)$")
# an entry that says why, not only that something was fixed
_FIXED = re.compile(
    r"\b(?:because|caused|cause|root|instead|must|should|needs?|requires?|doesn'?t"
    r"|does not|not supported|user (?:said|pointed|corrected|asked|wanted|feedback)|real (?:issue|bug)"
    r"|was (?:that|the))\b",
    re.I,
)
# the daily grind of editing code: nothing a later session needs
_MUNDANE = re.compile(
    r"\b(?:unused (?:variable|import|function|parameter)|compile errors?|typo|missing import"
    r"|dead code|formatting|gofmt|expected during|incremental editing)\b",
    re.I,
)
_PROCESS = re.compile(
    r"\b(?:in progress|still investigating|pending|next step|was analy[sz]ing|not yet fixed"
    # the story of the session rather than what it taught: "I initially thought X; the user
    # pointed out Y; led to deeper investigation", "now implementing that"
    r"|i (?:initially|first|originally) (?:thought|evaluated|assumed|believed)|led to (?:deeper"
    r"|further|more) \w+|now implementing)\b",
    re.I,
)


def find(text: str) -> list[str]:
    """One note per entry of the summary's errors-and-fixes and problem-solving sections."""
    notes: list[str] = []
    section = False
    entry: list[str] = []
    indent = 0

    def close() -> None:
        if not entry:
            return
        head, *rest = entry
        body = "; ".join(r.rstrip(".;") for r in rest)
        line = f"{head.rstrip(':')}: {body}" if body else head
        line = line.replace("**", "")
        head = head.replace("**", "")
        if (
            _FIXED.search(line)
            and not _PROCESS.search(line)
            and not _MUNDANE.search(line)
            and not head.lower().startswith(("solved", "problem "))
            and len(line.split()) >= 6
        ):
            notes.append(clip(line, MAX_CHARS))
        entry.clear()

    for raw in text.splitlines():
        if not raw.strip():
            continue
        h = _HEADING.match(raw)
        if h and not _TOP.match(raw):
            close()
            section = bool(_WANTED.match(h.group(1).strip()))
            continue
        if not section:
            continue
        m = _TOP.match(raw)
        if m and (not entry or len(m.group(1)) <= indent):
            close()
            indent = len(m.group(1))
            entry.append(" ".join(m.group(2).split()))
        elif entry:
            item = _TOP.match(raw)
            entry.append(" ".join((item.group(2) if item else raw).split()))
    close()
    return notes[:MAX_NOTES]
