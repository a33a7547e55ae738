"""A directory tree any depth deep, as a workload makes one to stop a recursive remover."""

from __future__ import annotations

import os


def nested(path: str, depth: int) -> None:
    """``depth`` directories named ``d``, one in the other, under a new ``path``, with a file
    and a link to /etc at the bottom. Made through descriptors: os.makedirs recurses once per
    level, and the path outgrows PATH_MAX."""
    os.mkdir(path)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            fd, up = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), fd
            os.close(up)
        os.close(os.open("bottom", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
        os.symlink("/etc", "etc-link", dir_fd=fd)
    finally:
        os.close(fd)
