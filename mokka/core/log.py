"""One logging setup for every Mokka command: a message plus fields.

``get(name)`` returns a logger whose ``info/warning/...`` take keyword fields
(``log.warning("left as authored", pod=..., reason=...)``); they are rendered
as JSON (the default) or as ``key=value`` pairs in plain format.
"""

from __future__ import annotations

import json
import logging
import sys
import time

from mokka.core.logopts import FORMATS, LEVELS, LogConfigError, parse_format, parse_level  # noqa: F401


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower().replace("warning", "warn"),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        doc.update(getattr(record, "fields", {}))
        if record.exc_info:
            doc["error"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


class _PlainFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        level = record.levelname.lower().replace("warning", "warn")
        parts = [time.strftime("%H:%M:%S", time.localtime(record.created)), level,
                 f"{record.name}:", record.getMessage()]
        for key, value in getattr(record, "fields", {}).items():
            parts.append(f"{key}={value}")
        # One record, one line: a path or value with a newline is shown escaped.
        line = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in " ".join(parts))
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure(level: str | None = "info", fmt: str | None = "json", stream=None) -> None:
    """Set up the root handler once per process (idempotent)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(_JsonFormatter() if parse_format(fmt) == "json" else _PlainFormatter())
    root.addHandler(handler)
    root.setLevel(parse_level(level))


def child_env() -> dict[str, str]:
    """MOKKA_LOG_LEVEL and MOKKA_LOG_FORMAT as this process is configured, for a Mokka
    child process (the agent's daemons) to log the same way."""
    root = logging.getLogger()
    fmt = "json" if any(isinstance(h.formatter, _JsonFormatter) for h in root.handlers) else "plain"
    level = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warn",
             logging.ERROR: "error"}.get(root.level, "info")
    from mokka.core import names
    return {names.ENV_LOG_LEVEL: level, names.ENV_LOG_FORMAT: fmt}


class Logger:
    """A thin wrapper that turns keyword arguments into structured fields."""

    def __init__(self, name: str):
        self._log = logging.getLogger(name)

    def _emit(self, level: int, msg: str, exc_info=None, **fields) -> None:
        if self._log.isEnabledFor(level):
            self._log.log(level, msg, exc_info=exc_info, extra={"fields": fields})

    def debug(self, msg: str, **fields) -> None:
        self._emit(logging.DEBUG, msg, **fields)

    def info(self, msg: str, **fields) -> None:
        self._emit(logging.INFO, msg, **fields)

    def warning(self, msg: str, **fields) -> None:
        self._emit(logging.WARNING, msg, **fields)

    def error(self, msg: str, **fields) -> None:
        self._emit(logging.ERROR, msg, **fields)

    def exception(self, msg: str, **fields) -> None:
        self._emit(logging.ERROR, msg, exc_info=True, **fields)


def get(name: str) -> Logger:
    return Logger(name)
