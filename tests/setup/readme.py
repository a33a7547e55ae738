"""The README's set-up commands, as a user copies them."""

from __future__ import annotations

import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(REPO, "README.md")
QUICK_START = "## Quick start"
RUN_THE_TESTS = "## Run the tests"


def section(title: str) -> str:
    with open(README) as f:
        text = f.read()
    start = text.index(title + "\n")
    end = text.find("\n## ", start + len(title))
    return text[start:] if end < 0 else text[start:end]


def sh_blocks(title: str) -> list[str]:
    """Each ```sh block of the section, as its text."""
    return [m.group(1).strip() for m in re.finditer(r"```sh\n(.*?)\n```", section(title), re.S)]


def first_command() -> str:
    """The quick start's first command: the bare host's build, stage and nvidia-smi."""
    return sh_blocks(QUICK_START)[0]


def install_packages() -> list[str]:
    """The packages the tests' install line names."""
    (line,) = [b for b in sh_blocks(RUN_THE_TESTS) if b.startswith("apt-get install")]
    return [w for w in line.split()[2:] if not w.startswith("-")]


def test_command() -> str:
    return sh_blocks(RUN_THE_TESTS)[-1]
