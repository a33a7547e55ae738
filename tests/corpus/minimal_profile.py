"""What the smallest profile a test writes gives every GPU: a name and a memory size, the
fields every nvidia-smi prints, without which Mokka refuses the profile. A test's own
profile adds ``DEFAULTS`` (a ``device_defaults`` line) or ``GPU_FIELDS`` (the same
entries, for a ``device_defaults`` flow mapping of its own)."""

#: The entries of a flow mapping: ``device_defaults: {<GPU_FIELDS>, ...}``.
GPU_FIELDS = 'name: "NVIDIA T4", memory: {total_bytes: 17179869184}'
#: A ``device_defaults`` line with only those fields.
DEFAULTS = f"device_defaults: {{{GPU_FIELDS}}}\n"
#: The same, for a profile built as a dict (dumped with yaml or json).
GPU = {"name": "NVIDIA T4", "memory": {"total_bytes": 17179869184}}
