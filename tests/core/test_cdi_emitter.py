"""The CDI specs' text: libyaml's emitter (fast) writes the very bytes of PyYAML's Python one."""

import pytest
import yaml

from mokka.core import cdi, names
from mokka.core.compile import compile_profile
from mokka.core.overlay import host_overlay
from mokka.core.profile import load


class _PythonEmitter(yaml.SafeDumper):
    def ignore_aliases(self, data):
        return True


@pytest.mark.parametrize("profile", names.BUILTIN_PROFILES)
def test_spec_text_is_what_pyyamls_own_emitter_writes(profile):
    state = compile_profile(load(profile))
    overlay = host_overlay("/")
    specs = [*cdi.specs(state, overlay).values(), cdi.management_spec(state, overlay)]
    for spec in specs:
        assert cdi.to_yaml(spec) == yaml.dump(spec, Dumper=_PythonEmitter, sort_keys=False,
                                              default_flow_style=False)
