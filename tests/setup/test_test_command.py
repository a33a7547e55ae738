"""The README's "Run the tests" and .ci/run agree: the packages to install first are
exactly the ones CI installs, CI runs the README's test command as written, and then builds
the docs site strictly."""

from __future__ import annotations

import os
import re

from tests.setup import readme

CI_RUN = os.path.join(readme.REPO, ".ci", "run")


def ci_text() -> str:
    with open(CI_RUN) as f:
        return f.read()


def test_ci_installs_exactly_what_the_readme_says_to_install_first():
    (array,) = re.findall(r"^PACKAGES=\((.*)\)$", ci_text(), re.M)
    assert array.split() == readme.install_packages()
    assert readme.install_packages() == ["python3-venv", "gcc", "npm", "mmdebstrap",
                                         "qemu-user-static", "util-linux", "golang-go", "pciutils"]


def test_ci_runs_the_readme_test_command_verbatim():
    command = readme.test_command()
    # Into a venv of its own: PEP 668 Pythons (Debian 12, Ubuntu 23.04 on) refuse the system's.
    assert command.startswith("python3 -m venv .venv && . .venv/bin/activate && ")
    # The docs extra beside the test extra: CI builds the site with it (below).
    assert command.endswith("python3 -m pytest -q") and "pip install -q -e '.[test,docs]'" in command
    assert command + "\n" in ci_text().splitlines(keepends=True)


def test_ci_builds_the_docs_site_strictly_into_a_scratch_dir_after_the_tests():
    lines = ci_text().splitlines()
    builds = [n for n, line in enumerate(lines) if "-m mkdocs build" in line]
    assert len(builds) == 1, "one docs build in .ci/run"
    build = lines[builds[0]]
    assert "--strict" in build and '--site-dir "$site"' in build and "|| status=1" in build
    assert 'site="$(mktemp -d)"' in lines[:builds[0]]
    assert lines.index(readme.test_command()) < builds[0]

