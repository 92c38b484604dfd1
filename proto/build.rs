//! Compiles `panel.proto` and `link.proto` (both package `crucible.panel.v1`, so the
//! generated code lands in one module) with protox (pure Rust, so no system `protoc` is
//! needed) and writes the encoded descriptor set of both files next to the generated code
//! for server reflection.

use std::path::PathBuf;

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = ["panel.proto", "link.proto"];
    for p in protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(protos, ["."])?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out_dir.join("panel_descriptor.bin"), fds.encode_to_vec())?;
    // Services only with the `grpc` feature, so the messages build without tonic.
    let grpc = std::env::var_os("CARGO_FEATURE_GRPC").is_some();
    tonic_prost_build::configure()
        .build_server(grpc)
        .build_client(grpc)
        .compile_fds(fds)?;
    Ok(())
}
