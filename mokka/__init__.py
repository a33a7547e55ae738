"""Mokka: mock NVIDIA GPUs, NVLink, InfiniBand and IMEX on a CPU-only node."""

__version__ = "0.1.0"
