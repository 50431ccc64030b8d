"""What a rule finds: a span of the text, its kind and the priority that names merged spans."""

from __future__ import annotations

import re
from typing import NamedTuple


class Span(NamedTuple):
    start: int
    end: int
    prio: int
    kind: str


# Priorities decide the kind of merged overlapping findings: the more specific rule names it.
P_BLOCK = 5
P_PROVIDER = 4
P_URL = 3
P_NAMED = 2
P_ENTROPY = 1

PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
