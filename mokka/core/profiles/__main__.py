"""``python3 -m mokka.core.profiles --write``: regenerate catalog.json from the profiles."""

from __future__ import annotations

import sys

from mokka.core.fsutil import atomic_write
from mokka.core.profiles import CATALOG, catalog_text


def main(args: list[str]) -> int:
    if args != ["--write"]:
        print("usage: python3 -m mokka.core.profiles --write", file=sys.stderr)
        return 2
    changed = atomic_write(CATALOG, catalog_text())
    print(f"{CATALOG}: {'written' if changed else 'up to date'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
