"""NRI wire codec, sans I/O: mux frames (``mux``), ttrpc messages and
envelopes (``ttrpc``), and both glued per socket (``conn.Connection``).
Nothing here reads or writes a socket; ``mokka.nri.plugin`` does."""
