"""A third-party client built with the stock toolchain (grpcio-tools' protoc and the
Python gRPC runtime), as an organisation writing its own client or node would: it calls
a live replica's Status, writes a client command and reads the state back.

Usage: python_client.py GENERATED_DIR HOST:PORT
"""

import json
import sys

sys.path.insert(0, sys.argv[1])

import grpc  # noqa: E402
import coordinator_pb2  # noqa: E402
import coordinator_pb2_grpc  # noqa: E402
import panel_pb2  # noqa: E402,F401  (the arbiter node's messages compile and import)
import link_pb2  # noqa: E402,F401

channel = grpc.insecure_channel(sys.argv[2])
stub = coordinator_pb2_grpc.CoordinatorStub(channel)
status = stub.Status(coordinator_pb2.StatusRequest(), timeout=10)
reply = stub.Write(
    coordinator_pb2.WriteRequest(
        client_id="python-interop",
        request_id=1,
        command_json=json.dumps({"CreateDebate": {
            "resolution": "Interop works", "pos_a": "yes", "pos_b": "no",
            "seats": 4, "min_per_stance": 1, "convener": "python",
        }}),
    ),
    timeout=10,
)
stats = stub.Read(coordinator_pb2.ReadRequest(query_json='"Stats"', linearizable=True), timeout=10)
print(json.dumps({
    "role": status.role,
    "applied": reply.applied,
    "result": json.loads(reply.result_json),
    "stats": json.loads(stats.result_json),
}))
