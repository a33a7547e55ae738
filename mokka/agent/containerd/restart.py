"""Restarting containerd: through the host's systemd, or not at all (a restart is pending).

The command runs through a ``Runner`` (argv -> (exit status, output)), so tests
hand in a recorder; the real one is ``run`` (subprocess, bounded). In a pod the
agent runs in the host's PID namespace, where ``systemctl`` reaches the host's
systemd; ``systemctl restart`` waits until the unit is up again and fails when
it does not come back.
"""

from __future__ import annotations

import subprocess
from typing import Callable, Sequence

from mokka.core import names

Runner = Callable[[Sequence[str]], tuple[int, str]]
TIMEOUT_S = 120.0


class RestartError(RuntimeError):
    pass


def run(argv: Sequence[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=TIMEOUT_S)
    except FileNotFoundError:
        return 127, f"{argv[0]}: not found on PATH"
    except subprocess.TimeoutExpired:
        return 124, f"no answer within {TIMEOUT_S:.0f}s"
    return done.returncode, (done.stderr or done.stdout).strip()


class Restarter:
    def __init__(self, mode: str, log, runner: Runner = run):
        if mode not in names.RESTART_MODES:
            raise ValueError(f"restart mode {mode!r} is not one of {names.RESTART_MODES}")
        self.mode = mode
        self.log = log
        self.runner = runner

    def restart(self, why: str) -> None:
        """Restart containerd now and wait for it; RestartError if it does not come back."""
        if self.mode == names.RESTART_MODE_NONE:
            self.log.warning("containerd configuration written; a containerd restart is pending "
                             "(--restart-mode=none): restart it to apply", reason=why)
            return
        self._run(names.CONTAINERD_RESTART_COMMAND, why)
        self.log.info("containerd restarted", reason=why)

    def queue(self, why: str) -> None:
        """Ask systemd to restart containerd without waiting (Revoke: finished after we exit)."""
        if self.mode == names.RESTART_MODE_NONE:
            self.log.warning("Mokka's containerd configuration removed; a containerd restart is "
                             "pending (--restart-mode=none): restart it to apply", reason=why)
            return
        self._run(names.CONTAINERD_QUEUE_RESTART_COMMAND, why)
        self.log.info("containerd restart queued", reason=why)

    def _run(self, argv: Sequence[str], why: str) -> None:
        status, output = self.runner(argv)
        if status != 0:
            command = " ".join(argv)
            raise RestartError(f"containerd did not come back: `{command}` exited {status}"
                               + (f": {output}" if output else "")
                               + "; see `journalctl -u containerd` on the node")
