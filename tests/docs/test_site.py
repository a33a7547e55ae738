"""The docs site builds as CI publishes it: ``mkdocs build --strict``, which fails on a
broken link or anchor, a missing include and a page left out of the nav; and it builds
offline (no plugin or theme downloads anything). mkdocs and its
theme come with the test extra (pyproject.toml), so this never skips where the tests run."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.docs import runnable

BUILD_TIMEOUT_S = 300


def build(site: str) -> subprocess.CompletedProcess:
    """The build, in a network namespace of its own: nothing it needs is fetched."""
    return subprocess.run(["unshare", "--net", sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--site-dir", site],
                          cwd=runnable.REPO, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)


def test_the_site_builds_strictly_with_every_page_and_the_included_files(tmp_path):
    site = tmp_path / "site"
    done = build(str(site))
    assert done.returncode == 0, done.stderr[-3000:]
    built = {os.path.relpath(os.path.join(d, f), site)
             for d, _, files in os.walk(site) for f in files if f == "index.html"}
    expected = {"index.html"} | {page[:-len(".md")] + "/index.html"
                                 for page in runnable.pages() if page != "index.md"}
    assert expected <= built
    # The includes are there: the README's command table and the benchmark figures.
    commands = (site / "users" / "commands" / "index.html").read_text()
    assert "mokka node-agent" in commands and "mokka profile capture" in commands
    results = (site / "contributors" / "results" / "index.html").read_text()
    assert "NRI CreateContainer latency" in results
