//! Compiles the schemas with protox (pure Rust, so no system `protoc` is needed) and writes
//! each package's encoded descriptor set next to the generated code for server reflection:
//! `panel.proto` and `link.proto` (both package `crucible.panel.v1`, the arbiter node's),
//! and `coordinator.proto` (package `crucible.coordinator.v1`, the coordinator's client
//! API, here so that the node and the coordinator share one generated schema).

use std::path::PathBuf;

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    // Services only with the `grpc` feature, so the messages build without tonic.
    let grpc = std::env::var_os("CARGO_FEATURE_GRPC").is_some();
    for (protos, descriptor) in [
        (&["panel.proto", "link.proto"][..], "panel_descriptor.bin"),
        (&["coordinator.proto"][..], "coordinator_descriptor.bin"),
    ] {
        for p in protos {
            println!("cargo:rerun-if-changed={p}");
        }
        let fds = protox::compile(protos, ["."])?;
        std::fs::write(out_dir.join(descriptor), fds.encode_to_vec())?;
        tonic_prost_build::configure()
            .build_server(grpc)
            .build_client(grpc)
            .compile_fds(fds)?;
    }
    Ok(())
}
