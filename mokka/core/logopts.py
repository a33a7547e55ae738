"""What ``--log-level`` and ``--log-format`` accept, every command alike.

Import-light (no logging module): ``mokka profiles`` refuses a bad option as every
command does, and logs nothing. A level is the logging module's name for it.
"""

from __future__ import annotations

LEVELS = {"debug": "DEBUG", "info": "INFO", "warn": "WARNING", "warning": "WARNING",
          "error": "ERROR", "": "INFO"}
FORMATS = ("json", "plain")


class LogConfigError(ValueError):
    pass


def parse_level(value: str | None) -> str:
    key = (value or "").strip().lower()
    if key not in LEVELS:
        raise LogConfigError(f"invalid --log-level {value!r}: use debug, info, warn or error")
    return LEVELS[key]


def parse_format(value: str | None) -> str:
    key = (value or "").strip().lower() or "json"
    if key not in FORMATS:
        raise LogConfigError(f"invalid --log-format {value!r}: use json or plain")
    return key
