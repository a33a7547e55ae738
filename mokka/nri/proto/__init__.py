"""Generated protobuf modules for NRI and the ttrpc envelope.

``nri_pb2`` and ``ttrpc_pb2`` are generated from the ``.proto`` files beside
them by ``tools/gen_proto.py`` and committed, so the zipapp needs only the
protobuf runtime, never protoc. Only code under ``mokka/nri`` (outside
``mokka/nri/inject``) may import them.
"""
