"""Annotation switches: how an opt-in or opt-out value is read, one rule for all.

Values compare case-insensitively after trimming surrounding whitespace, so
"TRUE", "True" and " true\n" all select and " FALSE" opts out. The trim is a
deliberate widening of the Go reference (which compared with EqualFold only):
a YAML block scalar (``|``) leaves a trailing newline, and a pod that visibly
says true but silently gets nothing is the failure this plugin exists to
prevent. Anything else ("1", "yes", "on", "") is neither true nor false.
"""

from __future__ import annotations

from typing import Mapping

TRUE = "true"
FALSE = "false"


def normalized(annotations: Mapping[str, str], key: str) -> str | None:
    """The trimmed, lower-cased value of ``key``; None when absent or not text."""
    value = annotations.get(key)
    if not isinstance(value, str):
        return None
    return value.strip().lower()


def is_true(annotations: Mapping[str, str], key: str) -> bool:
    return normalized(annotations, key) == TRUE


def is_false(annotations: Mapping[str, str], key: str) -> bool:
    return normalized(annotations, key) == FALSE
