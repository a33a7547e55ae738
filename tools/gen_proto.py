"""Regenerate mokka/nri/proto/*_pb2.py from the .proto files beside them.

    python tools/gen_proto.py            # rewrite the committed modules
    python tools/gen_proto.py --out DIR  # write elsewhere (the freshness test)

Needs grpcio-tools (a test dependency); the generated modules need only the
protobuf runtime.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTO_DIR = os.path.join(ROOT, "mokka", "nri", "proto")
PROTOS = ("nri.proto", "ttrpc.proto")


def generate(out_dir: str = PROTO_DIR) -> list[str]:
    """Run protoc on every proto; return the paths of the modules written."""
    import grpc_tools
    from grpc_tools import protoc

    # google/protobuf/any.proto ships inside grpc_tools.
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    # Protos are named from the repository root ("mokka/nri/proto/nri.proto"):
    # that name is the key in protobuf's process-wide descriptor pool, so a
    # bare "nri.proto" could collide with another library's file.
    rel = [os.path.relpath(os.path.join(PROTO_DIR, p), ROOT) for p in PROTOS]
    os.makedirs(out_dir, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(ROOT)   # relative names keep this checkout's path out of the output
        try:
            rc = protoc.main(["grpc_tools.protoc", "-I.", f"-I{include}",
                              f"--python_out={tmp}", *rel])
        finally:
            os.chdir(cwd)
        if rc != 0:
            raise RuntimeError(f"protoc failed with status {rc}")
        for name in rel:
            module = name.replace(".proto", "_pb2.py")
            target = os.path.join(out_dir, os.path.basename(module))
            shutil.copyfile(os.path.join(tmp, module), target)
            written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=PROTO_DIR, help="output directory")
    args = parser.parse_args(argv)
    for path in generate(os.path.abspath(args.out)):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
