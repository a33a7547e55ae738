"""A fleet of nodes: what a cluster sees of many Mokka nodes at once.

- ``gfd``: the node labels NVIDIA's gpu-feature-discovery writes for a board, computed from
  a profile (no node staged), and the extended resources NVIDIA's device plugin
  advertises beside them;
- ``kwok``: Node objects for KWOK, so a scheduler can be tested on more GPU nodes than one
  has.
"""
