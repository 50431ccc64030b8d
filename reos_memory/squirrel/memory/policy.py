"""`memory_policy.toml`: the shipped default, a user file and a project file, merged key by key.

Files later in the order override earlier ones. Every file is checked as it is merged, so an
unknown key or a bad value is reported with the file that introduced it and the key's path.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct

from reos_memory.errors import PolicyError
from reos_memory.models import MEMORY_KINDS

PROJECT_FILE = Path(".sqrl") / "memory_policy.toml"
NonNeg = Annotated[float, Meta(ge=0)]
Ratio = Annotated[float, Meta(ge=0.0, le=1.0)]  # float literals: see similarity_floor
Count = Annotated[int, Meta(ge=0, le=1_000_000)]


class Promotion(Struct, kw_only=True, forbid_unknown_fields=True):
    min_opportunities: Count | None = None
    min_use_ratio: Ratio | None = None
    min_regret_hits: Count | None = None
    extend_ttl_days: Annotated[int, Meta(ge=0, le=36500)] | None = None


class Deprecation(Struct, kw_only=True, forbid_unknown_fields=True):
    min_opportunities: Count | None = None
    max_use_ratio: Ratio | None = None


class Decay(Struct, kw_only=True, forbid_unknown_fields=True):
    max_inactive_days: Annotated[int, Meta(ge=1, le=36500)] | None = None


class Protection(Struct, kw_only=True, forbid_unknown_fields=True):
    kinds: list[str] = msgspec.field(default_factory=list)


class RegretWeights(Struct, kw_only=True, forbid_unknown_fields=True):
    alpha_errors: NonNeg = 1.0
    beta_retries: NonNeg = 0.5


class StatusWeights(Struct, kw_only=True, forbid_unknown_fields=True):
    active: float = 0.15
    provisional: float = 0.0


class TierWeights(Struct, kw_only=True, forbid_unknown_fields=True):
    emergency: float = 0.2
    long_term: float = 0.15
    short_term: float = 0.0


class KindWeights(Struct, kw_only=True, forbid_unknown_fields=True):
    invariant: float = 0.15
    preference: float = 0.15
    pattern: float = 0.08
    note: float = 0.0
    guard: float = 0.0


class Retrieval(Struct, kw_only=True, forbid_unknown_fields=True):
    # the same literals as rpc/types.py: typing caches equal Annotated types, so the first one
    # built decides how both render in the OpenRPC document
    similarity_floor: Annotated[float, Meta(ge=-1.0, le=1.0)] = 0.3
    keyword_floor_relief: Ratio = 0.05
    distinctive_share: Ratio = 0.05
    candidates: Annotated[int, Meta(ge=1, le=10_000)] = 40
    similarity: NonNeg = 1.0
    keyword: NonNeg = 0.25
    key_bonus: float = 0.3
    use_count: float = 0.05
    status: StatusWeights = msgspec.field(default_factory=StatusWeights)
    tier: TierWeights = msgspec.field(default_factory=TierWeights)
    kind: KindWeights = msgspec.field(default_factory=KindWeights)


class PolicyDoc(Struct, kw_only=True, forbid_unknown_fields=True):
    """The whole file; every section optional so a user file may hold just one key."""

    promotion: dict[str, Promotion] = msgspec.field(default_factory=dict)
    deprecation: dict[str, Deprecation] = msgspec.field(default_factory=dict)
    decay: dict[str, Decay] = msgspec.field(default_factory=dict)
    protection: Protection | None = None
    regret_weights: RegretWeights = msgspec.field(default_factory=RegretWeights)
    retrieval: Retrieval = msgspec.field(default_factory=Retrieval)


_SECTION_NAMES = frozenset(("default", *MEMORY_KINDS))


@dataclass
class Policy:
    """The effective policy and the files it came from, in order."""

    doc: PolicyDoc
    sources: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    _cache: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)

    def _section(self, name: str, kind: str, cls: type[Any]) -> Any:
        got = self._cache.get((name, kind))
        if got is None:
            got = self._cache[(name, kind)] = _resolve(getattr(self.doc, name), kind, cls)
        return got

    def promotion(self, kind: str) -> Promotion:
        return self._section("promotion", kind, Promotion)  # type: ignore[no-any-return]

    def deprecation(self, kind: str) -> Deprecation:
        return self._section("deprecation", kind, Deprecation)  # type: ignore[no-any-return]

    def max_inactive_days(self, kind: str) -> int | None:
        return self._section("decay", kind, Decay).max_inactive_days  # type: ignore[no-any-return]

    @property
    def protected_kinds(self) -> frozenset[str]:
        return frozenset(self.doc.protection.kinds if self.doc.protection else ())

    @property
    def retrieval(self) -> Retrieval:
        return self.doc.retrieval

    @property
    def regret(self) -> RegretWeights:
        return self.doc.regret_weights


def _resolve(sections: dict[str, Any], kind: str, cls: type[Any]) -> Any:
    """The kind's section over the default one, key by key."""
    out: dict[str, Any] = {}
    for name in ("default", kind):
        sec = sections.get(name)
        if sec is not None:
            out.update({k: v for k, v in msgspec.structs.asdict(sec).items() if v is not None})
    return cls(**out)


def default_text() -> str:
    """The shipped default policy file, as text."""
    return (resources.files("reos_memory.squirrel.memory") / "memory_policy.toml").read_text(
        "utf-8"
    )


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _check(doc: dict[str, Any], source: str) -> PolicyDoc:
    try:
        parsed = msgspec.convert(doc, PolicyDoc, strict=True)
    except msgspec.ValidationError as exc:
        msg = str(exc).replace("Object contains unknown field", "unknown key")
        raise PolicyError(f"{source}: {msg}", file=source) from None
    for section in ("promotion", "deprecation", "decay"):
        for name in getattr(parsed, section):
            if name not in _SECTION_NAMES:
                raise PolicyError(
                    f"{source}: unknown section [{section}.{name}] - must be 'default' or a kind"
                    f" ({', '.join(MEMORY_KINDS)})",
                    file=source,
                    key=f"{section}.{name}",
                )
    if parsed.protection is not None:
        bad = [k for k in parsed.protection.kinds if k not in MEMORY_KINDS]
        if bad:
            raise PolicyError(
                f"{source}: protection.kinds has unknown kinds {bad} (valid: {', '.join(MEMORY_KINDS)})",
                file=source,
                key="protection.kinds",
            )
    for kind in MEMORY_KINDS:
        d = _resolve(parsed.deprecation, kind, Deprecation)
        if d.max_use_ratio is not None and math.isnan(d.max_use_ratio):
            raise PolicyError(f"{source}: deprecation max_use_ratio is not a number", file=source)
    return parsed


def _read(path: Path) -> dict[str, Any]:
    try:
        data = msgspec.toml.decode(path.read_bytes())
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read: {exc.strerror}", file=str(path)) from None
    except msgspec.DecodeError as exc:
        raise PolicyError(f"{path}: not valid TOML: {exc}", file=str(path)) from None
    if not isinstance(data, dict):
        raise PolicyError(f"{path}: not a TOML table", file=str(path))
    return data


_loaded: dict[tuple[Any, ...], Policy] = {}
_loaded_lock = threading.Lock()


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size) if path.is_file() else None


def load_policy(user_file: str | None, project_root: str | None) -> Policy:
    """Default < user file < project file; missing files are skipped, broken ones are errors.

    The result is kept while the files are unchanged (same modification time and size), so the
    requests that consult the policy do not parse TOML each time; an edit shows at once.
    """
    candidates = []
    if user_file:
        candidates.append(Path(user_file).expanduser())
    if project_root:
        candidates.append(Path(project_root) / PROJECT_FILE)
    stamps = [_stamp(p) for p in candidates]
    key = (*(str(p) for p in candidates), *stamps)
    with _loaded_lock:
        hit = _loaded.get(key)
    if hit is not None:
        return hit
    merged = msgspec.toml.decode(default_text().encode())
    sources = ["(shipped default)"]
    doc = _check(merged, "(shipped default)")
    for path, stamp in zip(candidates, stamps, strict=True):
        if stamp is None:
            continue
        merged = _merge(merged, _read(path))
        doc = _check(merged, str(path))
        sources.append(str(path))
    policy = Policy(doc=doc, sources=sources, raw=merged)
    with _loaded_lock:
        if len(_loaded) >= 256:  # one entry per project seen; a long-lived server stays small
            _loaded.clear()
        _loaded[key] = policy
    return policy
