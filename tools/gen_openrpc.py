"""Write rpc_schema/openrpc.json (the local service) and rpc_schema/team-openrpc.json (the team
server) from the registered methods' msgspec types, then the tables of docs/ that come from the
code (`tools/gen_docs.py`: methods, tools, commands, the error table, the layout).

Usage: python tools/gen_openrpc.py [--check]
"""

from __future__ import annotations

import sys
from pathlib import Path

from reos_memory.interfaces.jsonrpc.methods import load_all
from reos_memory.interfaces.jsonrpc.openrpc import render

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "rpc_schema" / "openrpc.json"
TEAM_TARGET = ROOT / "rpc_schema" / "team-openrpc.json"


def team_document() -> str:
    """The team server's document (its interface needs the `team` extra)."""
    from reos_memory.interfaces.openrpc import as_text
    from reos_memory.interfaces.team_http import openrpc_document

    return as_text(openrpc_document())


def main() -> int:
    text = render(load_all())
    team = team_document()
    from tools import gen_docs

    wanted = [(TARGET, text), (TEAM_TARGET, team), *gen_docs.wanted().items()]
    if "--check" in sys.argv:
        stale = [
            str(p)
            for p, want in wanted
            if (p.read_text(encoding="utf-8") if p.exists() else "") != want
        ]
        if stale:
            print(f"stale: {', '.join(stale)}; run python tools/gen_openrpc.py", file=sys.stderr)
            return 1
        return 0
    for path, want in wanted:
        path.write_text(want, encoding="utf-8")
    print(
        f"wrote {TARGET} ({len(load_all().methods)} methods), {TEAM_TARGET} and the generated"
        " tables of docs/"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
