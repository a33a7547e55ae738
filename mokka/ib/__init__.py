"""mock-ib: the UMAD loopback behind libibmockumad (codec, responder, sessions, socket driver, relay)."""
