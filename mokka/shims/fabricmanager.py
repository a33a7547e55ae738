"""The nv-fabricmanager stand-in: a readiness marker with a lifecycle.

On a real NVSwitch node GPUs read fabric state IN_PROGRESS until
nv-fabricmanager has registered them. Here the marker ``fabricmanager.ready``
in the state dir plays that part (the mock NVML and nvidia-smi read ``state:
auto`` as COMPLETED only while it exists):

    start      remove a stale marker a killed run left
    delay      wait (SIGTERM/SIGINT still end the run at once)
    --fail     exit 1 without ever writing it: a fabric that never comes up
    ready      write it, then re-assert it every interval (someone may delete it)
    SIGTERM    remove it, exit 0

I/O only through ``Io`` so the sequence is testable without signals or sleeps.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from mokka.core import names
from mokka.core.fsutil import atomic_write


class FabricManagerFailed(Exception):
    """--fail: the fabric never comes up."""


@dataclass(frozen=True)
class Config:
    state_dir: str
    delay: float = 0.0
    fail: bool = False
    interval: float = names.FABRICMANAGER_REASSERT_S

    @property
    def marker(self) -> str:
        return os.path.join(self.state_dir, names.FABRICMANAGER_READY)


def marker_text(pid: int) -> bytes:
    return f"pid {pid}\n".encode()


def remove(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False


def run(cfg: Config, wait: Callable[[float], bool], log, pid: int | None = None) -> None:
    """The whole lifecycle. ``wait(seconds)`` returns True when told to stop.

    Raises FabricManagerFailed for --fail (after the delay, marker absent).
    """
    os.makedirs(cfg.state_dir, exist_ok=True)
    if remove(cfg.marker):
        log.info("removed a stale marker", marker=cfg.marker)
    try:
        if cfg.delay > 0:
            log.info("initializing", delay_s=cfg.delay, state_dir=cfg.state_dir)
            if wait(cfg.delay):
                return
        if cfg.fail:
            raise FabricManagerFailed(f"failed to start (--fail): GPUs with fabric state auto stay "
                                      f"IN_PROGRESS; no {names.FABRICMANAGER_READY} in {cfg.state_dir}")
        text = marker_text(os.getpid() if pid is None else pid)
        log.info("fabric ready", marker=cfg.marker)
        while True:
            if atomic_write(cfg.marker, text):
                log.debug("marker (re)written", marker=cfg.marker)
            if wait(cfg.interval):
                return
    finally:
        remove(cfg.marker)
