"""The agent accepts exactly what compile accepts: one table over the same corpus (the rejected
table, the valid forms — flow style, JSON, merge keys — and the generated hostile profiles),
and what it stages is a config.yaml that compiles to the very state it is stamped with."""

from __future__ import annotations

import json
import os

import pytest
from helpers import run_agent
from hypothesis import HealthCheck, given, settings

from mokka.agent import desired as ds
from mokka.core import compile as comp
from mokka.engine import flatstate
from mokka.core import profile as prof
from mokka.core.overlay import host_overlay
from tests.conftest import run_mokka
from tests.core.test_profile_errors import CASES, VALID
from tests.corpus.hostile_profiles import hostile_profiles

WHERE = "/profiles/p.yaml"
TABLE = [(c[0], c[1]) for c in CASES] + list(VALID)


def compile_accepts(text: bytes) -> bool:
    try:
        comp.compile_profile(prof.parse(text, source=WHERE, path=WHERE))
        return True
    except prof.ProfileError:
        return False


def agent_accepts(text: bytes) -> bool:
    try:
        desired = ds.build(1, WHERE, WHERE, text)
    except ds.DesiredError as exc:
        assert exc.file == WHERE and "\n" not in exc.reason
        return False
    staged = prof.parse(desired.config_text, source=WHERE, path=WHERE)
    assert desired.state["profile"]["digest"] == prof.digest(desired.config_text)
    assert flatstate.state_companion(comp.compile_profile(staged)) == desired.state_nvml
    assert staged.doc["system"]["num_devices"] == desired.gpu_count
    return True


def same_verdict(text: bytes) -> None:
    assert agent_accepts(text) == compile_accepts(text)


@pytest.mark.parametrize("text", [t for _, t in TABLE], ids=[n for n, _ in TABLE])
def test_the_agent_accepts_exactly_what_compile_accepts(text):
    same_verdict(text.encode())


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(hostile_profiles())
def test_the_same_over_generated_profiles(text):
    same_verdict(text.encode())


@pytest.mark.parametrize("name", ["flow-style system", "JSON", "merge key"])
def test_valid_forms_stage_through_the_real_agent(scratch, name):
    root, outside, _ = scratch
    path = os.path.join(outside, "p.yaml")
    with open(path, "w") as f:
        f.write(dict(VALID)[name])
    assert run_mokka("compile", "--profile", path).returncode == 0
    r = run_agent(root, "--once", "--profile", path)
    assert r.returncode == 0, r.stderr
    companion = open(host_overlay(root).profile[:-5] + ".nvml").read().splitlines()
    assert companion[1] == "digest " + prof.digest(open(host_overlay(root).profile, "rb").read())
    assert run_agent(root, "--teardown").returncode == 0
