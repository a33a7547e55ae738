"""The docs' runnable commands: each ```sh block right after a line ``<!-- runnable -->``.

A page's runnable blocks run in order, as one ``bash -euo pipefail`` script, from the
repository's top with ``dist/mokka`` built and ``$ROOT`` an empty scratch directory to stage a
node under; the node under ``$ROOT`` is torn down after the page.
"""

from __future__ import annotations

import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(REPO, "docs")
MARK = "<!-- runnable -->"
RUNNABLE_BLOCK = re.compile(r"^<!-- runnable -->\n```sh\n(.*?)\n```$", re.M | re.S)


def page_text(page: str) -> str:
    with open(os.path.join(DOCS, page)) as f:
        return f.read()


def pages() -> list[str]:
    """Every page of the site, as a path under docs/."""
    found = []
    for folder, _, files in os.walk(DOCS):
        found += [os.path.relpath(os.path.join(folder, f), DOCS) for f in files if f.endswith(".md")]
    return sorted(found)


def runnable_blocks(page: str) -> list[str]:
    """The page's runnable blocks, in order, as their text."""
    return RUNNABLE_BLOCK.findall(page_text(page))


def marks(page: str) -> int:
    """How many lines of the page mark a block as runnable."""
    return sum(line.strip() == MARK for line in page_text(page).splitlines())


def pages_with_runnable_blocks() -> list[str]:
    return [page for page in pages() if runnable_blocks(page)]


def script(page: str) -> str:
    """The page's runnable blocks as one script, in the page's order."""
    return "\n".join(runnable_blocks(page)) + "\n"


def checkout_view(dest: str, zipapp: str) -> str:
    """A directory that reads as the repository's top with ``dist/mokka`` built: a link to
    each top-level entry of the checkout, and ``dist/mokka`` a link to ``zipapp``."""
    os.makedirs(os.path.join(dest, "dist"))
    for name in os.listdir(REPO):
        if name not in ("dist", ".git"):
            os.symlink(os.path.join(REPO, name), os.path.join(dest, name))
    os.symlink(zipapp, os.path.join(dest, "dist", "mokka"))
    return dest
