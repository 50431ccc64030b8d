"""Every example of section 7 of the JSON-RPC 2.0 specification, replayed over real stdio."""

from __future__ import annotations

import json
import sys
import time

import pytest

from harness.rpc_client import Server

pytestmark = pytest.mark.e2e


@pytest.fixture
def spec():
    with Server(None, cmd=[sys.executable, "-m", "tests.spec_server"]) as srv:
        yield srv


def roundtrip(srv: Server, text: str, expect: int = 1):
    """Send raw text; return the messages it produced (waits for `expect`, then a quiet spell).

    Newline-delimited framing carries one message per line, so pretty-printed JSON is
    compacted first (invalid JSON is sent as it is, on one line).
    """
    try:
        text = json.dumps(json.loads(text))
    except ValueError:
        text = " ".join(text.split("\n"))
    before = len(srv.raw_lines)
    srv.send_bytes(text.encode())
    deadline = time.monotonic() + 10
    while len(srv.raw_lines) - before < expect and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # anything more (a reply to a notification, say) would show up here
    return [json.loads(x) for x in srv.raw_lines[before:]]


def test_positional_params(spec):
    assert roundtrip(
        spec, '{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}'
    ) == [{"jsonrpc": "2.0", "result": 19, "id": 1}]
    assert roundtrip(
        spec, '{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}'
    ) == [{"jsonrpc": "2.0", "result": -19, "id": 2}]


def test_named_params(spec):
    assert roundtrip(
        spec,
        '{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}',
    ) == [{"jsonrpc": "2.0", "result": 19, "id": 3}]
    assert roundtrip(
        spec,
        '{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}',
    ) == [{"jsonrpc": "2.0", "result": 19, "id": 4}]


def test_notifications_get_no_reply(spec):
    assert (
        roundtrip(spec, '{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}', expect=0)
        == []
    )
    assert roundtrip(spec, '{"jsonrpc": "2.0", "method": "foobar"}', expect=0) == []


def test_method_not_found(spec):
    [resp] = roundtrip(spec, '{"jsonrpc": "2.0", "method": "foobar", "id": "1"}')
    assert resp["id"] == "1" and resp["error"]["code"] == -32601
    assert resp["error"]["message"].startswith("Method not found")


def test_invalid_json(spec):
    [resp] = roundtrip(spec, '{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]')
    assert resp["id"] is None and resp["error"]["code"] == -32700


def test_invalid_request_object(spec):
    [resp] = roundtrip(spec, '{"jsonrpc": "2.0", "method": 1, "params": "bar"}')
    assert resp["id"] is None and resp["error"]["code"] == -32600


def test_batch_invalid_json(spec):
    [resp] = roundtrip(
        spec,
        '[ {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"}, {"jsonrpc": "2.0", "method" ]',
    )
    assert resp["id"] is None and resp["error"]["code"] == -32700


def test_empty_array(spec):
    [resp] = roundtrip(spec, "[]")
    assert isinstance(resp, dict) and resp["id"] is None and resp["error"]["code"] == -32600


def test_invalid_batch_not_empty(spec):
    [resp] = roundtrip(spec, "[1]")
    assert isinstance(resp, list) and len(resp) == 1
    assert resp[0]["id"] is None and resp[0]["error"]["code"] == -32600


def test_invalid_batch(spec):
    [resp] = roundtrip(spec, "[1,2,3]")
    assert len(resp) == 3
    assert all(r["id"] is None and r["error"]["code"] == -32600 for r in resp)


def test_mixed_batch(spec):
    [resp] = roundtrip(
        spec,
        """[
        {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
        {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
        {"foo": "boo"},
        {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
        {"jsonrpc": "2.0", "method": "get_data", "id": "9"}
    ]""",
    )
    assert isinstance(resp, list) and len(resp) == 5
    by_id = {r["id"]: r for r in resp if r["id"] is not None}
    assert by_id["1"]["result"] == 7
    assert by_id["2"]["result"] == 19
    assert by_id["5"]["error"]["code"] == -32601
    assert by_id["9"]["result"] == ["hello", 5]
    invalid = [r for r in resp if r["id"] is None]
    assert len(invalid) == 1 and invalid[0]["error"]["code"] == -32600


def test_all_notification_batch(spec):
    assert (
        roundtrip(
            spec,
            '[{"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]}, {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}]',
            expect=0,
        )
        == []
    )


def test_id_rules(spec):
    # an id of the wrong type cannot be echoed: -32600 with id null
    [resp] = roundtrip(
        spec, '{"jsonrpc": "2.0", "method": "subtract", "params": [1, 1], "id": {"a": 1}}'
    )
    assert resp["id"] is None and resp["error"]["code"] == -32600
    # a readable id is echoed even when the request is otherwise invalid
    [resp] = roundtrip(spec, '{"jsonrpc": "1.0", "method": "subtract", "params": [1, 1], "id": 77}')
    assert resp["id"] == 77 and resp["error"]["code"] == -32600
    # null id is a request (answered), not a notification
    [resp] = roundtrip(
        spec, '{"jsonrpc": "2.0", "method": "subtract", "params": [5, 1], "id": null}'
    )
    assert resp == {"jsonrpc": "2.0", "result": 4, "id": None}
    # too many positional params
    [resp] = roundtrip(
        spec, '{"jsonrpc": "2.0", "method": "subtract", "params": [5, 1, 2], "id": 8}'
    )
    assert resp["error"]["code"] == -32602


def test_a_batch_item_that_raises_is_answered_and_the_batch_too(spec):
    replies = roundtrip(
        spec,
        '[{"jsonrpc": "2.0", "method": "sum", "params": [1, 2], "id": "a"},'
        ' {"jsonrpc": "2.0", "method": "explode", "params": {}, "id": "b"},'
        ' {"jsonrpc": "2.0", "method": "get_data", "id": "c"}]',
    )
    assert len(replies) == 1 and isinstance(replies[0], list)
    by_id = {r["id"]: r for r in replies[0]}
    assert by_id["a"]["result"] == 3 and by_id["c"]["result"] == ["hello", 5]
    assert by_id["b"]["error"]["code"] == -32603 and by_id["b"]["error"]["data"]["incident"]
    assert (
        roundtrip(spec, '{"jsonrpc": "2.0", "method": "explode", "params": {}, "id": 9}')[0][
            "error"
        ]["code"]
        == -32603
    )
    assert roundtrip(spec, '{"jsonrpc": "2.0", "method": "sum", "params": [2], "id": 10}') == [
        {"jsonrpc": "2.0", "result": 2, "id": 10}
    ]
