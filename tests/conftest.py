from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.rpc_client import Server


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def server(db_path: Path) -> Iterator[Server]:
    with Server(db_path) as srv:
        yield srv


def make_block(srv: Server, content: str = "text", act_id: str = "act-1", **extra) -> str:
    return srv.call(
        "blocks/create", {"type": "paragraph", "act_id": act_id, "content": content, **extra}
    )["block"]["id"]
