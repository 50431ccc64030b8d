"""What the tests of the agent adapters share: a fake home laid out from a fixture, an app on
a temporary database, and a log read through an adapter alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from reos_memory.squirrel.ingest.base import Adapter, Parsed, ParseState


def copy_home(fixture: Path, home: Path, fill: dict[str, str]) -> None:
    """The fixture's files under `home`, each placeholder (`@PROJECT@`) filled in."""
    for src in fixture.rglob("*"):
        if src.is_file():
            dst = home / src.relative_to(fixture)
            dst.parent.mkdir(parents=True, exist_ok=True)
            text = src.read_text()
            for mark, value in fill.items():
                text = text.replace(mark, value)
            dst.write_text(text)


def open_app(db: Path) -> object:
    """The service on `db` with the hash embedder, started (close it)."""
    from reos_memory.app import App
    from reos_memory.config import load_config
    from reos_memory.logs import setup_logging

    cfg = load_config(None, {"db": str(db), "embedder": "hash"})
    cfg = msgspec.structs.replace(cfg, catch_up_indexing=False, owner_id="tester")
    a = App(cfg, setup_logging("warning"))
    a.start()
    a.embeddings.wait_ready(30)
    return a


@pytest.fixture
def app(tmp_path: Path) -> Iterator[object]:
    a = open_app(tmp_path / "m.db")
    yield a
    a.close()  # type: ignore[attr-defined]


def parse_all(
    adapter: Adapter, path: Path, *, finish: bool = True
) -> tuple[list[Parsed], ParseState, int]:
    """Every event of a log through the adapter alone, its state, its malformed records."""
    state, out, bad = ParseState(), [], 0
    adapter.begin(str(path), state)
    for rec in adapter.records(str(path), 0, 1 << 30):
        if rec.data is None:
            bad += rec.malformed
            continue
        out += adapter.parse(rec.data, state)
    if finish:
        out += adapter.finish(state)
    return out, state, bad
