"""The Python side of the engine. The mock NVML library (native/nvml) is the one engine
that decides what a process sees; everything Python does with it lives here:

- ``flatstate``: the compiled companion format (``<stem>.nvml``), the only form the
  library reads, and ``statekeys``: every key of the compiled state (the C library's
  ``mokka_keys.h`` is generated from it);
- ``pair``: the one writer of a document pair (companion first, YAML last), which the
  agent, ``mokka ctl`` and ``mokka compile --companion`` all use; ``overrides``: the
  runtime overrides documents; ``xidlog``: the one way Xid events are added;
- ``nvml`` and ``nvml_types``: the ctypes binding every Python reader asks through
  (nvidia-smi, ctl, the agent), and ``native``: where the built libraries are;
- ``migplace``: where GPU instances go, asked of the library (its one placement rule),
  which compile plans boot layouts with.

Nothing outside this package writes a ``.nvml`` file.
"""
