"""Secret redaction: every Squirrel event, memory and (with ``redact_blocks``) block passes here.

``rules`` runs the rules (see its docstring for them and the module of each), ``providers`` the
provider formats known by their prefix, ``normalize`` the NFKC / zero-width reading, ``scope`` the
episode-wide memory of values already found (a value redacted once is redacted everywhere in the
episode, and a key split over two adjacent events is found across them).
"""

from reos_memory.squirrel.redaction.engine import (
    find_secrets,
    forget_short_answers,
    redact,
    redact_folded,
    redact_found,
    redact_value,
)
from reos_memory.squirrel.redaction.scope import SecretScope, peek_scope, redact_events, scope_for

__all__ = [
    "SecretScope",
    "find_secrets",
    "forget_short_answers",
    "peek_scope",
    "redact",
    "redact_events",
    "redact_folded",
    "redact_found",
    "redact_value",
    "scope_for",
]
