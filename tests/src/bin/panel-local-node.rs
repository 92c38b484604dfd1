//! `panel node run --config FILE` with the in-process model judge built in, for the tests
//! that run a local-model node as its own process (tests/tests/local_judge_cluster.rs): the
//! `panel` binary of a plain `cargo test --workspace` carries no model engine (the
//! `local-judge` feature is off for the main job's build). The same `panel_node::run` as
//! the `panel` binary's.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(config) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: panel-local-node NODE.toml");
        return ExitCode::from(2);
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let result = panel_node::config::NodeConfig::load(&config)
        .map_err(|e| e.to_string())
        .and_then(|cfg| {
            let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
            rt.block_on(panel_node::run(
                cfg,
                panel_node::run::RunOverrides::default(),
            ))
            .map_err(|e| e.to_string())
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
