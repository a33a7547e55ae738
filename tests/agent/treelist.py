"""A full listing of a directory tree, for "left the host as it was found" checks.

One line per path: relative path, type, permission bits, and the payload that
defines it (device numbers, symlink target, or content digest). Timestamp-based
.pyc files embed their source's mtime, so for them only the size counts.
"""

from __future__ import annotations

import hashlib
import os
import stat


def listing(root: str, names_only_under: tuple[str, ...] = ()) -> list[str]:
    """``names_only_under``: relative prefixes whose files count by name and mode only
    (the staged copy of Mokka's own source, which colleagues edit while tests run)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            mode = f"{stat.S_IMODE(st.st_mode):04o}"
            if stat.S_ISLNK(st.st_mode):
                out.append(f"{rel} link {os.readlink(path)}")
            elif stat.S_ISDIR(st.st_mode):
                out.append(f"{rel} dir {mode}")
            elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                kind = "chr" if stat.S_ISCHR(st.st_mode) else "blk"
                out.append(f"{rel} {kind} {mode} {os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")
            elif stat.S_ISREG(st.st_mode):
                if name.endswith(".pyc") or rel.startswith(names_only_under or ("\0",)):
                    out.append(f"{rel} file {mode} size={st.st_size}")
                else:
                    with open(path, "rb") as f:
                        digest = hashlib.sha256(f.read()).hexdigest()[:16]
                    out.append(f"{rel} file {mode} {digest}")
            else:
                out.append(f"{rel} other {mode}")
    return out


def diff(before: list[str], after: list[str]) -> str:
    a, b = set(before), set(after)
    lines = [f"- {x}" for x in sorted(a - b)] + [f"+ {x}" for x in sorted(b - a)]
    return "\n".join(lines[:60])
