"""Names for JSON values at the edges (the wire, config files, agents' settings files).

A value read from JSON is `object` until it is decoded into a Struct or narrowed with
`isinstance`; a value about to be encoded is `object` too, since the encoder takes any of them.
These aliases only say which `object` is JSON, so that `interfaces/` and `cli/` need no `Any`
(mypy's `disallow_any_explicit` holds there, see pyproject.toml).
"""

from __future__ import annotations

from collections.abc import Mapping

JSONObject = dict[str, object]  # a JSON object being built, or decoded and not yet narrowed
JSONMapping = Mapping[str, object]  # a JSON object only read (accepts any dict[str, ...])


def as_object(value: object, what: str) -> JSONObject:
    """`value` as a JSON object, or TypeError naming `what` (for documents this program built,
    such as a generated schema, where any other shape is a bug)."""
    if not isinstance(value, dict):
        raise TypeError(f"{what}: expected a JSON object, got {type(value).__name__}")
    return value
