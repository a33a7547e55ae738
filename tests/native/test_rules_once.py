"""Each rule once: the C library keeps no copy of a rule compile applies.

The topology overlay is applied when the profile compiles (mokka/core/topology.py); the
library reads the result in config.nvml and looks at no topology document or node name
of its own (what that means to a process: tests/corpus/engine_cases.py's topology rows).
"""

from __future__ import annotations

import glob
import os
import re

from tests.native.conftest import REPO


def test_the_library_reads_no_topology_document_and_no_node_name():
    sources = glob.glob(os.path.join(REPO, "native", "nvml", "**", "*.[ch]"), recursive=True)
    assert sources
    for path in sources:
        with open(path) as f:
            text = f.read()
        for name in ("MOKKA_ENV_TOPOLOGY_CONFIG", "MOKKA_ENV_NODE_NAME", "KIND_TOPOLOGY",
                     "MOKKA_TOPOLOGY_COMPANION"):
            assert not re.search(rf"\b{name}", text), (path, name)
