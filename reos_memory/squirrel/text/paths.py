"""Paths in a memory's text made portable: a memory is read by later sessions, other checkouts
and, once shared, a whole team, so it names files relative to the project and never a person's
home directory (which carries their user name).

`/Users/alex/work/app/src/cache.ts` in a checkout at `/Users/alex/work/app` becomes
`src/cache.ts`; any other home path becomes `~/...` (macOS `/Users/<name>`, Linux
`/home/<name>`, root's `/root`, Windows `C:\\Users\\<name>`)."""

from __future__ import annotations

import re

# what ends a path in prose: spaces, quotes, backticks, brackets, a comma or colon after it
_PATH_END = r"(?=$|[\s'\"`)\]}>,;:])"
_HOMES = re.compile(
    r"(?<![\w./~-])(?:/Users/[^/\s'\"`]+|/home/[^/\s'\"`]+|/root(?=/)|/var/root(?=/))"
    r"|(?<![\w\\])[A-Za-z]:\\(?:Users|Documents and Settings)\\[^\\\s'\"`]+",
)


def portable(text: str, project_root: str | None = None) -> str:
    """`text` with the checkout's paths made project-relative and every home directory `~`."""
    if project_root:
        root = project_root.rstrip("/\\")
        if len(root) > 1:
            text = text.replace(root + "/", "").replace(root + "\\", "")
            text = re.sub(r"(?<![\w./-])" + re.escape(root) + _PATH_END, ".", text)
    return _HOMES.sub("~", text)


def has_home_path(text: str) -> bool:
    """Whether `text` names a path inside someone's home directory."""
    return _HOMES.search(text) is not None
