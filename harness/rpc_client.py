"""A JSON-RPC client that drives the real server process over its stdin/stdout."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# the `sqrl` command line, as its console script runs it
SQRL = [
    sys.executable,
    "-c",
    "from reos_memory.cli import sqrl_main; raise SystemExit(sqrl_main())",
]


class RpcError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.error = error
        self.code = error.get("code")
        self.data = error.get("data", {})


class Server:
    """A spawned `python -m reos_memory serve` (or any command) speaking newline-delimited JSON."""

    def __init__(
        self,
        db: str | os.PathLike[str] | None,
        *,
        args: list[str] | None = None,
        env: dict[str, str] | None = None,
        cmd: list[str] | None = None,
        framing: str = "ndjson",
        stdin: Any = subprocess.PIPE,
        embedder: str = "hash",
    ) -> None:
        self.framing = framing
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        if cmd is None:
            cmd = [
                sys.executable,
                "-m",
                "reos_memory",
                "serve",
                *(["--db", str(db)] if db else []),
                "--embedder",
                embedder,
                *(args or []),
            ]
        # the log file outlives this scope; __exit__ removes it
        self.stderr_file = tempfile.NamedTemporaryFile(
            prefix="reos-stderr-", suffix=".log", delete=False
        )
        self.proc = subprocess.Popen(
            cmd,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=self.stderr_file,
            env=full_env,
            cwd=str(ROOT),
        )
        self._stderr_text: str | None = None
        self._ids = itertools.count(1)
        self._responses: dict[Any, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self.notifications: list[dict[str, Any]] = []
        self.batches: queue.Queue[list[Any]] = queue.Queue()
        self.raw_lines: list[bytes] = []
        self.unparseable: list[bytes] = []
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # -- transport ---------------------------------------------------------------------------

    def _read_frames(self):
        out = self.proc.stdout
        assert out is not None
        if self.framing == "ndjson":
            for line in out:
                self.raw_lines.append(line)
                yield line
        else:
            while True:
                headers = {}
                while True:
                    line = out.readline()
                    if not line:
                        return
                    if line in (b"\r\n", b"\n"):
                        break
                    k, _, v = line.decode().partition(":")
                    headers[k.strip().lower()] = v.strip()
                body = out.read(int(headers["content-length"]))
                self.raw_lines.append(body)
                yield body

    def _read_loop(self) -> None:
        for frame in self._read_frames():
            try:
                msg = json.loads(frame)
            except ValueError:
                self.unparseable.append(frame)
                continue
            with self._cond:
                if isinstance(msg, list):
                    self.batches.put(msg)
                elif "id" in msg and ("result" in msg or "error" in msg):
                    self._responses[_key(msg["id"])] = msg
                else:
                    self.notifications.append(msg)
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        if self.framing == "lsp":
            data = b"Content-Length: %d\r\n\r\n%s" % (len(data), data)
        elif not data.endswith(b"\n"):
            data += b"\n"
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def wait_lines(self, n: int, timeout: float = 30.0) -> list[bytes]:
        """The raw lines received, once there are at least `n` of them."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.raw_lines) < n:
                left = deadline - time.monotonic()
                assert left > 0, f"only {len(self.raw_lines)} of {n} lines arrived"
                self._cond.wait(left)
        return self.raw_lines

    def send(self, message: Any) -> None:
        self.send_bytes(json.dumps(message).encode())

    # -- requests ----------------------------------------------------------------------------

    def request(self, method: str, params: Any = None, *, id: Any = None) -> Any:
        """Send a request without waiting; returns its id."""
        rid = next(self._ids) if id is None else id
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return rid

    def notify(self, method: str, params: Any = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def response(self, rid: Any, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while _key(rid) not in self._responses:
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    raise TimeoutError(f"no response to {rid!r}; stderr:\n{self.stderr()[-3000:]}")
                self._cond.wait(min(left, 0.2))
            return self._responses.pop(_key(rid))

    def has_response(self, rid: Any) -> bool:
        with self._cond:
            return _key(rid) in self._responses

    def call(self, method: str, params: Any = None, timeout: float = 30.0) -> Any:
        resp = self.response(self.request(method, params), timeout)
        if "error" in resp:
            raise RpcError(resp["error"])
        return resp["result"]

    def error(self, method: str, params: Any = None) -> RpcError:
        """Call a method that must fail; return the error."""
        resp = self.response(self.request(method, params))
        assert "error" in resp, f"expected an error from {method}, got {resp}"
        return RpcError(resp["error"])

    def batch(self, items: list[Any], timeout: float = 30.0) -> list[Any]:
        self.send_bytes(json.dumps(items).encode())
        return self.batches.get(timeout=timeout)

    def wait_ready(self, timeout: float = 60.0) -> str:
        """Wait until the embedder has loaded (or failed / is disabled) and start-up indexing is
        over; returns the embedder state."""
        deadline = time.monotonic() + timeout
        while True:
            info = self.call("service/info")
            settled = info["catch_up_indexing"] not in ("waiting", "running")
            if (info["embedder_status"] != "loading" and settled) or time.monotonic() > deadline:
                return info["embedder_status"]
            time.sleep(0.01)

    # -- lifecycle ---------------------------------------------------------------------------

    def stderr(self) -> str:
        if self._stderr_text is not None:
            return self._stderr_text
        return Path(self.stderr_file.name).read_text(errors="replace")

    def close(self, timeout: float = 20.0) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        finally:
            self._reader.join(5)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.proc.poll() is None:
                self.close()
        finally:
            self.kill()
            self._stderr_text = self.stderr()
            os.unlink(self.stderr_file.name)


def _key(rid: Any) -> Any:
    return (type(rid).__name__, rid)
