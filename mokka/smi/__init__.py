"""The GPU surface of the mock: the engine both shims read and nvidia-smi's renderers.

``engine`` turns the compiled state plus the runtime environment (visibility,
topology document, fabric marker, overrides) into the list of GPUs a process
sees; everything else here is pure rendering over those GPU dicts. Nothing in
this package imports yaml at module level: ``nvidia-smi -L`` must stay cheap.
"""
