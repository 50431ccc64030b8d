"""`sqrl ui`: the web UI for the local database, on 127.0.0.1 only (issue 22)."""

from __future__ import annotations

import html
import os
import socket
import sys
import tempfile
import threading
import time
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING

from reos_memory.interfaces.web.app import build
from reos_memory.interfaces.web.guard import Guard

if TYPE_CHECKING:
    import uvicorn

    from reos_memory.interfaces.services import Services


def serve(
    app: Services, port: int | None, *, open_browser: bool, log_level: str = "warning"
) -> int:
    """Serve the UI for `app`'s Squirrel until interrupted: prints the address with its token
    (and opens it in the browser unless told not to)."""
    import uvicorn

    # bound and listening before the address is printed: whoever reads it (a script, a test)
    # connects at once, and no other process can take a port picked here in the meantime
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", port or 0))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        sys.stderr.write(f"sqrl ui: cannot listen on 127.0.0.1:{port}: {exc.strerror}\n")
        return 1
    port = int(sock.getsockname()[1])
    guard = Guard(port)
    from reos_memory.graph import export

    asgi = build(app.squirrel, guard, title="reos-memory", graph=lambda p: export.export(app.db, p))
    config = uvicorn.Config(
        asgi, host="127.0.0.1", port=port, log_level=log_level, access_log=False, lifespan="off",
        server_header=False,
    )  # fmt: skip
    server = uvicorn.Server(config)
    url = guard.url("/memories")
    sys.stdout.write(f"reos-memory UI: {url}\n(only this address works: it holds the token)\n")
    sys.stdout.flush()
    if open_browser:
        threading.Thread(target=_open_when_up, args=(server, url), daemon=True).start()
    with sock:
        server.run(sockets=[sock])
    return 0


def _open_when_up(server: uvicorn.Server, url: str) -> None:
    """Open the UI in the browser once the server listens, through a private file that
    redirects to it: a browser started with the address itself would show the token to every
    user of the machine in its command line (as Jupyter does, for the same reason)."""
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    fd, path = tempfile.mkstemp(prefix="reos-ui-", suffix=".html")  # mode 0600
    with os.fdopen(fd, "w") as f:
        f.write(
            '<!doctype html><meta charset="utf-8">'
            f'<meta http-equiv="refresh" content="0;url={html.escape(url)}">'
            f'<a href="{html.escape(url)}">reos-memory UI</a>'
        )
    webbrowser.open(Path(path).as_uri())
