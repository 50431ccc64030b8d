"""Where a rule applies: in all the user's projects ("everywhere", "in all my repos") or in
this one ("in this repo", "here")."""

from __future__ import annotations

import re

GLOBAL_RE = re.compile(
    r"\b(?:in|for|across|on)\s+(?:all|every|each|any)\s+(?:of\s+)?(?:my|our|the|your)?\s*"
    r"(?:other\s+)?(?:projects?|repos?|repositories|codebases?)\b|\beverywhere\b"
    r"|\bregardless\s+of\s+(?:the\s+)?(?:project|repo)\b"
    r"|\bno\s+matter\s+(?:the|which|what)\s+(?:project|repo)\b"
)
GLOBAL_HINT_RE = re.compile(r"\b(?:all|every|each|any|everywhere|regardless|matter)\b")
PROJECT_HINT_RE = re.compile(r"\b(?:this|here)\b")
GLOBAL_PREFIX_RE = re.compile(r"(?:" + GLOBAL_RE.pattern + r")[\s,:-]*")
GLOBAL_STRIP_RE = re.compile(r",?\s*(?:" + GLOBAL_RE.pattern + r")\s*,?", re.IGNORECASE)
PROJECT_RE = re.compile(
    r"\b(?:in|for|within)\s+this\s+(?:repo(?:sitory)?|project|codebase|code\s*base|monorepo"
    r"|service|app|package|team)\b|\bhere\b(?!')"
)
PROJECT_PREFIX_RE = re.compile(
    r"(?:(?:in|for|within)\s+this\s+(?:repo(?:sitory)?|project|codebase|code\s*base|monorepo"
    r"|service|app|package|team)|here)\b[\s,:-]*(?=\w)"
)
