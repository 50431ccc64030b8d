"""Write rpc_schema/openrpc.json from the registered methods' msgspec types.

Usage: python tools/gen_openrpc.py [--check]
"""

from __future__ import annotations

import sys
from pathlib import Path

from reos_memory.interfaces.jsonrpc.methods import load_all
from reos_memory.interfaces.jsonrpc.openrpc import render

TARGET = Path(__file__).resolve().parents[1] / "rpc_schema" / "openrpc.json"


def main() -> int:
    text = render(load_all())
    if "--check" in sys.argv:
        current = TARGET.read_text() if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} is stale; run python tools/gen_openrpc.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET} ({len(load_all().methods)} methods)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
