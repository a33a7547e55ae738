"""1 000+ generated hostile profiles: each is refused with one line naming the file (and the
field, where there is one), or it loads and every consumer of the compiled state takes it."""

from __future__ import annotations

import re

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings

from mokka.cmd import compile as compile_cmd
from mokka.cmd import render_cdi as render_cmd
from mokka.core import cdi
from mokka.engine import flatstate
from mokka.core import compile as comp
from mokka.core.overlay import host_overlay
from mokka.core.profile import ProfileError, parse
from tests.corpus.hostile_profiles import hostile_profiles

WHERE = "/profiles/hostile.yaml"


def outcome(text: str) -> str:
    """"ok", or the one-line error; anything else (a traceback) fails the test."""
    try:
        profile = parse(text.encode(), source=WHERE, path=WHERE)
    except ProfileError as exc:
        message = str(exc)
        assert "\n" not in message and message.startswith(f"{WHERE}: "), message
        return message
    state = comp.compile_profile(profile, None, "node-1")
    comp.dumps(state)
    companion = flatstate.state_companion(state)
    # The C library scans it line by line: every line is "<key without spaces> <value>".
    assert all(re.match(rb"[^ \n]+ ", line) for line in companion.split(b"\n")[2:-1])
    for spec in cdi.specs(state, host_overlay("/"), nvml_library_staged=True).values():
        cdi.to_yaml(spec)
    return "ok"


@settings(max_examples=1200, deadline=None, suppress_health_check=list(HealthCheck))
@given(hostile_profiles())
def test_hostile_profiles_are_refused_in_one_line_or_compile(text):
    outcome(text)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(hostile_profiles())
def test_hostile_profiles_through_compile_and_render_cdi(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("p") / "hostile.yaml"
    path.write_text(text)
    for name, command in (("compile", compile_cmd.command), ("render-cdi", render_cmd.command)):
        result = CliRunner().invoke(command, ["--profile", str(path)], prog_name=f"mokka {name}")
        assert result.exit_code in (0, 1), (name, result.output, result.exception)
        assert result.exception is None or isinstance(result.exception, SystemExit), \
            (name, repr(result.exception))
        if result.exit_code == 1:
            lines = result.stderr.strip().splitlines()
            assert lines == [lines[0]] and lines[0].startswith(f"{name}: {path}: "), lines


#: Every schema field set, one at a time, to each of these.
EACH = [None, [], {}, "", "x\n", -1, 2**64, 1.5, True, [None], {"a": None}]


def test_every_declared_field_takes_every_hostile_value():
    import copy

    import yaml

    from tests.corpus.hostile_profiles import BASE, PATHS, set_path

    failures = []
    for path in PATHS:
        for value in EACH:
            doc = copy.deepcopy(BASE)
            set_path(doc, path, value)
            try:
                outcome(yaml.safe_dump(doc))
            except Exception as exc:  # noqa: BLE001 - collect every failure, then report
                failures.append((path, value, f"{type(exc).__name__}: {exc}"))
    assert failures == []
