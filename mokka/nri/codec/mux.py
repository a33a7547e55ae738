"""The NRI multiplexer framing, sans I/O: bytes <-> (connection id, payload).

One Unix socket carries two logical byte streams. Each frame is an 8-byte
header (connection id, payload length; both uint32 big-endian) and the
payload. Frame boundaries mean nothing to the layer above: reassembly into
ttrpc messages is per connection, in ``mokka.nri.codec.ttrpc``.

This module is the one home of the framing constants.
"""

from __future__ import annotations

import struct
from typing import Callable, Mapping, NamedTuple

FRAME_HEADER = struct.Struct(">II")
FRAME_HEADER_SIZE = FRAME_HEADER.size          # 8

#: Logical connection ids. The runtime calls the plugin on PLUGIN_CONN (the
#: plugin is the ttrpc server there); the plugin calls the runtime on
#: RUNTIME_CONN. Id 0 is reserved.
PLUGIN_CONN = 1
RUNTIME_CONN = 2
CONN_IDS = (PLUGIN_CONN, RUNTIME_CONN)

#: The Go runtime reads each connection through a 4096-byte buffer and takes
#: exactly one frame per read: a longer frame kills the whole socket. So every
#: frame we write carries at most this many bytes.
MAX_WRITE_PAYLOAD = 4096
#: The Go multiplexer refuses to send frames over 16 MiB; a longer length in
#: a header means the stream is corrupt, and buffering it is how a reader
#: would grow without bound.
MAX_FRAME_PAYLOAD = 16 << 20


class ProtocolError(Exception):
    """The byte stream cannot be a valid NRI stream: close the socket."""


class NeedData:
    """Sentinel: nothing complete yet; feed more bytes (h11's NEED_DATA)."""

    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA = NeedData()


class Frame(NamedTuple):
    """A frame's payload, or a piece of it (``FrameReader`` streams long ones)."""

    conn_id: int
    payload: bytes


class ReceiveBuffer:
    """A bytearray plus a read offset; compacts lazily so extraction is cheap."""

    def __init__(self) -> None:
        self._data = bytearray()
        self._start = 0

    def __len__(self) -> int:
        return len(self._data) - self._start

    def __bytes__(self) -> bytes:
        return bytes(self._data[self._start:])

    def append(self, data: bytes) -> None:
        self._data += data

    def peek(self, n: int) -> bytes | None:
        start = self._start
        if len(self._data) - start < n:
            return None
        with memoryview(self._data) as view:      # one copy, not two
            return bytes(view[start:start + n])

    def unpack(self, fmt: struct.Struct, consume: bool = True) -> tuple | None:
        """``fmt`` unpacked from the front (and removed, if ``consume``), or None
        if fewer than ``fmt.size`` bytes are buffered. No copy."""
        start = self._start
        if len(self._data) - start < fmt.size:
            return None
        out = fmt.unpack_from(self._data, start)
        if consume:
            self._start = start + fmt.size
        return out

    def take(self, n: int) -> bytes | None:
        """Remove and return exactly ``n`` bytes, or None if fewer are buffered."""
        out = self.peek(n)
        if out is not None:
            self.skip_to(self._start + n)
        return out

    def skip_to(self, start: int) -> None:
        """Drop everything before offset ``start`` of the underlying data: at once when
        nothing is left, else once the dropped part is past 64 KiB and most of the buffer
        (compaction costs a copy of what is left; it changes no byte a reader sees)."""
        if start == len(self._data):
            self._data.clear()
            self._start = 0
        elif start > 65536 and start * 2 > len(self._data):
            del self._data[:start]
            self._start = 0
        else:
            self._start = start

    def take_up_to(self, n: int) -> bytes:
        start = self._start
        with memoryview(self._data) as view:
            out = bytes(view[start:start + n])
        self.skip_to(start + len(out))
        return out


def pending(buf: ReceiveBuffer) -> int:
    """``len(buf)`` without the method call (asked on every request)."""
    return len(buf._data) - buf._start


class FrameReader:
    """bytes in (``receive_data``), Frames out (``next_frame``).

    A frame's payload is handed on as it arrives, in pieces when it arrives in
    pieces (frame boundaries mean nothing above), so the reader never holds
    more than one read's worth of bytes whatever length a header claims: a
    message the layer above discards is never buffered here either.
    """

    def __init__(self, max_payload: int = MAX_FRAME_PAYLOAD) -> None:
        self._buf = ReceiveBuffer()
        self._max = max_payload
        self._error: ProtocolError | None = None
        self._conn_id = 0
        self._remaining: int | None = None     # payload bytes of the current frame still due

    def receive_data(self, data: bytes) -> None:
        self._buf.append(data)

    @property
    def trailing_data(self) -> bytes:
        """Bytes received but not yet handed out."""
        return bytes(self._buf)

    @property
    def buffered(self) -> int:
        return len(self._buf)

    @property
    def buffer(self) -> ReceiveBuffer:
        return self._buf

    @property
    def empty(self) -> bool:
        """Nothing buffered and no error to report (``next_frame`` is NEED_DATA)."""
        buf = self._buf
        return buf._start == len(buf._data) and self._error is None

    def next_frame(self) -> Frame | NeedData:
        """The next frame, or the next piece of one; NEED_DATA when nothing is due."""
        if self._error is not None:
            raise self._error        # a broken stream stays broken
        if self._remaining is None:
            header = self._buf.unpack(FRAME_HEADER)
            if header is None:
                return NEED_DATA
            conn_id, length = header
            if length > self._max:
                self._error = ProtocolError(
                    f"frame of {length} bytes on connection {conn_id} exceeds {self._max}")
                raise self._error
            if length == 0:
                return Frame(conn_id, b"")
            self._conn_id, self._remaining = conn_id, length
        if not len(self._buf):
            return NEED_DATA
        piece = self._buf.take_up_to(self._remaining)
        self._remaining -= len(piece)
        if not self._remaining:
            self._remaining = None
        return Frame(self._conn_id, piece)


    def take_whole(self, sizers: Mapping[int, Callable[[bytearray, int, int], int | None]]
                   ) -> Frame | None:
        """The common case in one step: the frames at the front, all of one
        connection, that carry exactly one message, joined and taken; None
        (nothing taken) for anything else, which ``next_frame`` then handles.

        ``sizers[conn_id](data, offset, length)`` reads the message's size off
        the first frame's payload (``data[offset:offset + length]``), or None
        when that connection is not at a message boundary; a connection with
        no sizer is not taken here. One copy of the message instead of one per
        frame and one more on reassembly.
        """
        if self._remaining is not None or self._error is not None:
            return None
        buf = self._buf
        data, pos, end = buf._data, buf._start, len(buf._data)
        if end - pos < FRAME_HEADER_SIZE:
            return None
        conn_id, length = FRAME_HEADER.unpack_from(data, pos)
        pos += FRAME_HEADER_SIZE
        if not 0 < length <= self._max or pos + length > end:
            return None
        sizer = sizers.get(conn_id)
        size = None if sizer is None else sizer(data, pos, length)
        if size is None or size < length:
            return None
        pieces = [(pos, pos + length)]
        pos += length
        got = length
        while got < size:
            if end - pos < FRAME_HEADER_SIZE:
                return None
            cid, length = FRAME_HEADER.unpack_from(data, pos)
            pos += FRAME_HEADER_SIZE
            if cid != conn_id or not 0 < length <= size - got or pos + length > end:
                return None
            pieces.append((pos, pos + length))
            pos += length
            got += length
        with memoryview(data) as view:
            if len(pieces) == 1:
                start, stop = pieces[0]
                message = bytes(view[start:stop])
            else:
                message = b"".join([view[start:stop] for start, stop in pieces])
        buf.skip_to(pos)
        return _new_tuple(Frame, (conn_id, message))


_new_tuple = tuple.__new__


def encode_frame(conn_id: int, payload: bytes) -> bytes:
    """One frame, header and payload together (write it contiguously)."""
    return FRAME_HEADER.pack(conn_id, len(payload)) + payload


def encode_frames(conn_id: int, message: bytes,
                  max_payload: int = MAX_WRITE_PAYLOAD) -> bytes:
    """One whole ttrpc message as consecutive frames of <= ``max_payload`` bytes.

    Never mixes two messages in a frame: call once per message.
    """
    if not message:
        raise ValueError("a ttrpc message is never empty (10-byte header)")
    if len(message) <= max_payload:
        return FRAME_HEADER.pack(conn_id, len(message)) + message
    return b"".join(encode_frame(conn_id, message[i:i + max_payload])
                    for i in range(0, len(message), max_payload))
