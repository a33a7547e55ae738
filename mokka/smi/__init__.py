"""The GPU tools of the mock: nvidia-smi, check-fabric and ctl's logic.

They are clients of the mock NVML library, the one engine that decides what a
process sees (mokka.engine.nvml loads it, mokka.smi.gpu asks it); the rest here
renders what NVML answers, as NVIDIA's nvidia-smi does, and writes the runtime
overrides. Nothing in this package imports yaml on nvidia-smi's paths.
"""
