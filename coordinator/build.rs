//! Compiles `proto/*.proto` with protox (pure Rust, no system `protoc`) and writes the encoded
//! descriptor set to `OUT_DIR` for tonic-reflection (compile_fds does not write one itself).

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = ["proto/coordinator.proto", "proto/replica.proto"];
    for p in protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(protos, ["proto"])?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("coordinator_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
