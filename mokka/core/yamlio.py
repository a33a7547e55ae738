"""YAML reading, one way: libyaml's C loader when PyYAML has it.

The pure-Python SafeLoader takes ~15 ms for a CDI spec or a profile; the C
loader a tenth of that, and it is what ``import yaml`` has loaded anyway.
Import this module only where YAML is read (never on nvidia-smi's -L path).
"""

from __future__ import annotations

import yaml

YAMLError = yaml.YAMLError
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(data):
    """``yaml.safe_load`` semantics (plain data only), C-accelerated."""
    return yaml.load(data, Loader=_Loader)
