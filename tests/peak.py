"""A child's own peak resident set, measured so the test process's size cannot leak into it.

wait4's ``ru_maxrss`` of a child is not the child's alone: Linux starts a forked child's
high-water mark at its parent's resident set and carries it over exec. A child forked from a
pytest process that has grown to 300 MiB in a long suite reports at least 300 MiB, whatever it
used. So the command is started by a small launcher (an isolated interpreter of a few MiB),
which forks it, waits for it with wait4, and writes back its exit status and peak RSS.

    child = Launched(argv, env=..., stdout=..., stderr=...)   # Popen's keywords
    child.pid, child.stdout, child.stderr                     # the launcher's, for waiting
    status, max_rss_bytes = child.finish(timeout)             # status None: killed, past timeout
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

_LAUNCHER = r"""
import os, sys
report = int(sys.argv[1])
pid = os.fork()
if pid == 0:
    os.close(report)
    try:
        os.execvpe(sys.argv[2], sys.argv[2:], os.environ)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
os.write(report, b"%d %d\n" % (os.waitstatus_to_exitcode(status), usage.ru_maxrss))
"""


class Launched:
    def __init__(self, argv: list[str], **popen_kwargs):
        read_end, write_end = os.pipe()
        try:
            self._proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _LAUNCHER, str(write_end), *argv],
                                          pass_fds=(write_end,), start_new_session=True, **popen_kwargs)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        self._report = read_end
        self.pid = self._proc.pid
        self.stdout = self._proc.stdout
        self.stderr = self._proc.stderr

    def kill(self) -> None:
        """The launcher and the command (one session of their own)."""
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def finish(self, timeout: float | None) -> tuple[int | None, int]:
        """(the command's exit status, negative for a signal; its peak RSS in bytes).
        Past ``timeout`` both are killed and the status is None, the RSS 0."""
        try:
            self._proc.wait(timeout)
            ended = True
        except subprocess.TimeoutExpired:
            ended = False
            self.kill()
            self._proc.wait()
        with os.fdopen(self._report, "rb") as report:
            line = report.read().split()
        if not ended:
            return None, 0
        assert len(line) == 2, f"the launcher ended with {self._proc.returncode} and no report"
        return int(line[0]), int(line[1]) * 1024
