"""Feature gates: ``Name=true|false,...`` over the defaults in names.FEATURE_GATES."""

from __future__ import annotations

from mokka.core import names


class FeatureGateError(ValueError):
    pass


def parse(spec: str | None, known: dict[str, bool] = names.FEATURE_GATES) -> dict[str, bool]:
    gates = dict(known)
    for item in (spec or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip().lower()
        if name not in known:
            raise FeatureGateError(
                f"unknown feature gate {name!r} in --feature-gates: known gates are "
                + ", ".join(sorted(known)))
        if not sep or value not in ("true", "false"):
            raise FeatureGateError(
                f"feature gate {item!r} in --feature-gates: write {name}=true or {name}=false")
        gates[name] = value == "true"
    return gates
