//! Compiles `proto/replica.proto` (replica to replica) with protox (pure Rust, no system
//! `protoc`) and writes the encoded descriptor set to `OUT_DIR` for tonic-reflection
//! (compile_fds does not write one itself). The client API, `coordinator.proto`, is
//! generated in `panel-proto`, which the node shares.

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = ["proto/replica.proto"];
    for p in protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(protos, ["proto"])?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("replica_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
