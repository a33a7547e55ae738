"""tests/image runs the built image in the real containerd of tests/integration."""

from tests.integration.conftest import (  # noqa: F401  (fixtures, by name)
    container_support, cri_api, pytest_runtest_makereport, runtime)
