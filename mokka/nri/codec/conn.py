"""Both logical connections of one NRI socket, sans I/O (h11's connection glue).

``receive_data`` takes whatever the socket read; ``next_event`` returns the
next ttrpc event of either logical connection, in arrival order, or
``NEED_DATA``. The ``*_bytes`` methods return the frames to write for one
message; the caller owns the socket and writes each result contiguously.
"""

from __future__ import annotations

from mokka.nri.codec import mux, ttrpc
from mokka.nri.codec.mux import NEED_DATA, NeedData


class Connection:
    def __init__(self, max_frame: int = mux.MAX_FRAME_PAYLOAD,
                 max_message: int = ttrpc.MAX_PAYLOAD,
                 max_discard: int = ttrpc.MAX_DISCARD) -> None:
        self._frames = mux.FrameReader(max_frame)
        # Frames for any other connection id are discarded, as the Go mux does.
        self._readers = {cid: ttrpc.MessageReader(cid, max_message, max_discard) for cid in mux.CONN_IDS}
        self._sizers = {cid: reader.message_size for cid, reader in self._readers.items()}
        # Bytes arrive into the frame reader's buffer; every buffer that can hold
        # bytes not yet handed out is listed once (each lives as long as its reader).
        self._incoming = self._frames.buffer
        self._buffers = (self._incoming, *(reader.buffer for reader in self._readers.values()))
        self._draining: ttrpc.MessageReader | None = None

    def receive_data(self, data: bytes) -> None:
        self._incoming.append(data)

    @property
    def buffered(self) -> int:
        """Bytes received and not yet handed out as events (whole or partial messages)."""
        # Asked after every request: each buffer's size read directly, no
        # property or generator on the way.
        total = 0
        for buf in self._buffers:
            total += mux.pending(buf)
        return total

    def next_event(self) -> ttrpc.Event | NeedData:
        """Raises ``mux.ProtocolError`` when the stream is corrupt (close it)."""
        if self._draining is None and self._frames.empty:
            return NEED_DATA           # asked first on every turn: nothing to look at
        while self._draining is None:
            # The common case: whole messages in whole frames, one copy each.
            frame = self._frames.take_whole(self._sizers)
            if frame is None:
                break
            event = self._readers[frame.conn_id].decode_whole(frame.payload)
            if event is not None:
                return event
        while True:
            if self._draining is not None:
                event = self._draining.next_event()
                if event is not NEED_DATA:
                    return event
                self._draining = None
            frame = self._frames.next_frame()
            if frame is NEED_DATA:
                return NEED_DATA
            reader = self._readers.get(frame.conn_id)
            if reader is not None:
                reader.receive_data(frame.payload)
                self._draining = reader

    def events(self) -> list[ttrpc.Event]:
        """Every event complete so far."""
        out = []
        while (event := self.next_event()) is not NEED_DATA:
            out.append(event)
        return out

    # --- Writing: one message -> its frames --------------------------------------

    @staticmethod
    def request_bytes(conn_id: int, stream_id: int, service: str, method: str,
                      payload: bytes = b"", timeout_nano: int = 0) -> bytes:
        message = ttrpc.encode_request(stream_id, service, method, payload, timeout_nano)
        return mux.encode_frames(conn_id, message)

    @staticmethod
    def response_bytes(conn_id: int, stream_id: int, payload: bytes = b"",
                       code: int = ttrpc.OK, message: str = "") -> bytes:
        return mux.encode_frames(conn_id, ttrpc.encode_response(stream_id, payload, code, message))
