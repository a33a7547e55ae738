"""The node agent: a level-triggered reconciler over small simulators."""
