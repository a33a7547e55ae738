"""``mokka profiles`` prints the catalog, which says what the profiles say, and loads
nothing it does not print (no click, no YAML, no profile compiled)."""

from __future__ import annotations

import json
import subprocess
import sys

from mokka.core import names
from mokka.core.profiles import CATALOG, WRITE_COMMAND, catalog_text, describe
from tests.conftest import REPO, run_mokka


def test_the_catalog_is_what_the_profiles_say():
    with open(CATALOG) as f:
        assert f.read() == catalog_text(), f"catalog.json is stale: run {WRITE_COMMAND}"


def test_the_listing_is_the_profiles_own_figures():
    rows = json.loads(run_mokka("profiles", "-o", "json", check=True).stdout)
    assert rows == [{**describe(n), "default": n == names.DEFAULT_PROFILE} for n in names.BUILTIN_PROFILES]
    assert rows[4] == {"name": "gb300", "gpu": "NVIDIA GB300 NVL", "count": 8, "memory_mib": 294912,
                       "driver": "570.124.06", "default": True}
    table = run_mokka("profiles", check=True).stdout.splitlines()
    assert table[0].split() == ["PROFILE", "GPU", "COUNT", "MEMORY", "DRIVER"]
    assert table[5] == "gb300 (default)  NVIDIA GB300 NVL       8      294912 MiB  570.124.06"


def test_profiles_loads_no_click_yaml_or_profile():
    code = ("import sys; from mokka.cmd.main import main; main(['mokka', 'profiles']);"
            "print('LOADED', sorted(m for m in ('yaml', 'click', 'mokka.core.profile', 'mokka.core.compile')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         check=True).stdout
    assert out.splitlines()[-1] == "LOADED []"
