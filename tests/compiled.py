"""The compiled engine state of a staged profile, for tests that compare what a tool
prints with what the profile says (the node keeps only the compiled companion)."""

from __future__ import annotations


def state_of(config_path: str, node_name: str = "") -> dict:
    """``config.yaml`` as the agent staged it, compiled as the agent compiles it for a
    node it was given the name of (``--node-name``: the GPUs' identities are that node's)."""
    from mokka.core import compile as comp
    from mokka.core import profile as prof

    return comp.compile_profile(prof.load(config_path), None, node_name, node_name)
