"""CDI specs checked against CDI's own JSON schema (fetched with the runtime)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

from tests.integration.runtime import fetched

_CDI_VALIDATORS: dict[str, Any] = {}


def cdi_validator(schema_dir: str | os.PathLike | None = None):
    """A jsonschema validator for CDI specs, from schema.json + defs.json."""
    if schema_dir is None:
        schema_dir = fetched("CDI schema").cdi_schema_dir
    schema_dir = os.path.abspath(schema_dir)
    if schema_dir in _CDI_VALIDATORS:
        return _CDI_VALIDATORS[schema_dir]
    import jsonschema
    from referencing import Registry
    from referencing.jsonschema import DRAFT7

    base = Path(schema_dir).as_uri() + "/"
    schema = json.loads((Path(schema_dir) / "schema.json").read_text())
    defs = json.loads((Path(schema_dir) / "defs.json").read_text())
    schema = {**schema, "$id": base + "schema.json"}
    registry = Registry().with_resources([
        (base + "schema.json", DRAFT7.create_resource(schema)),
        (base + "defs.json", DRAFT7.create_resource(defs)),
    ])
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    cls.check_schema(schema)
    validator = cls(schema, registry=registry, format_checker=cls.FORMAT_CHECKER)
    _CDI_VALIDATORS[schema_dir] = validator
    return validator


def validate_cdi_spec(spec: Mapping[str, Any], schema_dir: str | os.PathLike | None = None) -> None:
    """Validate a CDI spec dict; raises jsonschema.ValidationError if invalid."""
    cdi_validator(schema_dir).validate(spec)
