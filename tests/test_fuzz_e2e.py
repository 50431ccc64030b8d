"""Fuzzing over real stdio, driven by rpc_schema/openrpc.json (harness/fuzz.py): valid and invalid
params for every method, hostile framing, odd ids and mixed batches. Every reply well-formed,
the process alive, never -32603. `python tools/fuzz.py --examples N` runs the long budget."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import fuzz

pytestmark = pytest.mark.e2e

FUZZ = settings(
    max_examples=6,
    deadline=None,
    derandomize=True,  # the same cases on every run: CI never flakes on a new one
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    with fuzz.fresh_server(tmp_path_factory.mktemp("fuzz")) as s:
        s.wait_ready()
        yield s


@pytest.mark.parametrize("method", sorted(fuzz.METHODS))
def test_every_method_answers_any_params_well(srv, method):
    @FUZZ
    @given(st.data())
    def run(data):
        params = data.draw(fuzz.valid_params(method) | fuzz.invalid_params(method))
        fuzz.call_and_check(srv, method, params)

    run()
    assert srv.call("ping") == {"pong": True}


def test_hostile_framing_gets_one_error_each_and_the_process_lives(srv):
    for what, raw in fuzz.hostile_frames(16 * 1024 * 1024):
        before = len(srv.raw_lines)
        srv.send_bytes(raw)
        reply = json.loads(srv.wait_lines(before + 1)[before])
        if what == "a lone surrogate" or what == "invalid UTF-8":
            assert reply["id"] in (2, 3) and reply["error"]["code"] == -32602, what
        else:
            assert reply["id"] is None and reply["error"]["code"] in (-32700, -32600), what
        assert srv.call("ping") == {"pong": True}, what


def test_odd_ids_come_back_and_bad_ones_are_refused(srv):
    for rid in fuzz.ODD_IDS:
        fuzz.check_reply(srv.response(srv.request("ping", id=rid)), rid)
    for rid in fuzz.BAD_IDS:
        before = len(srv.raw_lines)
        srv.send_bytes(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"}).encode())
        reply = json.loads(srv.wait_lines(before + 1)[before])
        assert reply["id"] is None and reply["error"]["code"] == -32600


def test_a_mixed_batch_is_answered_item_by_item(srv):
    replies = srv.batch(fuzz.mixed_batch())
    by_id = {r.get("id"): r for r in replies}
    assert len(replies) == 6  # every item but the notification
    assert by_id["b1"]["result"] == {"pong": True} and "result" in by_id["b5"]
    assert by_id["b2"]["error"]["code"] == -32601 and by_id["b3"]["error"]["code"] == -32602
    assert by_id["b4"]["error"]["code"] == -32600 and by_id[None]["error"]["code"] == -32600
