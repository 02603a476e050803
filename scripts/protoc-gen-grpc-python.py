"""A protoc plugin that runs grpcio-tools' built-in gRPC Python generator, for `buf generate`.

grpcio-tools compiles the gRPC Python generator into its own protoc instead of shipping a
`protoc-gen-grpc_python` executable, and buf only accepts protoc's own built-ins through
`protoc_builtin`. This plugin bridges the two: it receives buf's CodeGeneratorRequest on stdin,
hands the request's files to grpcio-tools' protoc as a descriptor set (so no .proto file or
include path is needed), and answers with the files that protoc wrote. Run with the .venv's
Python (buf.gen.clients.yaml), where scripts/setup-clients.sh installed grpcio-tools.
"""

import pathlib
import sys
import tempfile

from google.protobuf import descriptor_pb2
from google.protobuf.compiler import plugin_pb2
from grpc_tools import protoc


def generate(request: plugin_pb2.CodeGeneratorRequest) -> plugin_pb2.CodeGeneratorResponse:
    response = plugin_pb2.CodeGeneratorResponse(
        supported_features=plugin_pb2.CodeGeneratorResponse.FEATURE_PROTO3_OPTIONAL,
    )
    with tempfile.TemporaryDirectory(prefix="grpc-python-") as tmp:
        work = pathlib.Path(tmp)
        descriptors = work / "request.binpb"
        descriptors.write_bytes(descriptor_pb2.FileDescriptorSet(file=request.proto_file).SerializeToString())
        out = work / "out"
        out.mkdir()
        options = f"{request.parameter}:" if request.parameter else ""
        status = protoc.main(
            [
                "protoc",
                f"--descriptor_set_in={descriptors}",
                f"--grpc_python_out={options}{out}",
                *request.file_to_generate,
            ]
        )
        if status != 0:
            response.error = f"grpcio-tools protoc exited with status {status}"
            return response
        for path in sorted(p for p in out.rglob("*") if p.is_file()):
            response.file.add(name=path.relative_to(out).as_posix(), content=path.read_text(encoding="utf-8"))
    return response


def main() -> int:
    request = plugin_pb2.CodeGeneratorRequest.FromString(sys.stdin.buffer.read())
    sys.stdout.buffer.write(generate(request).SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main())
