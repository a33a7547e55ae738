"""The Python side of the engine: what writes the documents the mock NVML library reads.

The library (native/nvml) is the one engine that decides what a process sees; it
reads each YAML document through its compiled companion (``<stem>.nvml``). This
package is where those pairs are written (``pair``) and where the Xid events
document is appended to (``xidlog``), so that every writer, the agent, ``mokka ctl``
and ``mokka compile``, publishes a pair by the same rule.
"""
