//! `panel model serve`: an OpenAI-compatible chat-completions endpoint over the in-process
//! model engine (docs/JUDGES.md "panel model serve"), so a node's `llm` judge, or any
//! client of that API, can use a GGUF file without llama.cpp. The server is
//! `panel_node::model_serve`; it exists in a `panel` built with the `local-judge` feature.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Serve a GGUF model as an OpenAI-compatible endpoint: POST /v1/chat/completions
    /// (with logprobs and top_logprobs) and GET /v1/models; one completion at a time.
    Serve(ServeArgs),
}

#[derive(clap::Args)]
#[cfg_attr(not(feature = "local-judge"), allow(dead_code))]
struct ServeArgs {
    /// The GGUF model file.
    #[arg(long, value_name = "FILE")]
    model: PathBuf,
    /// Where the endpoint listens (host:port; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8081", value_name = "HOST:PORT")]
    listen: SocketAddr,
    /// How weights candle multiplies on a scalar path (Q5_0, Q5_1) are held: auto (f32 for
    /// files up to 600 MB, else q8), re-quantized to q8 at load, expanded to f32 (fastest,
    /// most memory) or as in the file.
    #[arg(long, default_value = "auto", value_parser = ["auto", "q8", "f32", "as-file"])]
    weights: String,
    /// Longest prompt and answer of one request, in tokens (bounds the memory of a cache).
    #[arg(long, default_value_t = 4096)]
    context: usize,
    /// Most tokens one completion writes (at most 256); larger requests are lowered to it.
    #[arg(long, default_value_t = 256)]
    max_tokens: usize,
    /// Requests that may wait while one completion runs; more are answered 503.
    #[arg(long, default_value_t = 16)]
    max_queue: usize,
    /// Never return log-probabilities, as an endpoint without them (a judge then falls back
    /// to the number the model writes).
    #[arg(long)]
    no_logprobs: bool,
    /// Listen on an address other than loopback and answer requests addressed to any host.
    /// The endpoint has no authentication: put it behind a firewall or a proxy that has.
    #[arg(long)]
    allow_remote: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.command {
        Command::Serve(a) => serve(a),
    }
}

#[cfg(feature = "local-judge")]
fn serve(a: ServeArgs) -> Result<ExitCode> {
    use panel_node::model_serve::{self, Engine, MAX_TOKENS_CAP, ServeOptions};
    use std::sync::Arc;

    model_serve::check_listen(a.listen, a.allow_remote)?;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init();
    let weights = model_serve::parse_weights(&a.weights, &a.model)?;
    let started = std::time::Instant::now();
    let engine = Arc::new(Engine::load(&a.model, weights, a.context)?);
    let md = engine.model().metadata();
    println!(
        "loaded {} ({}, {}{}) in {:.1} s",
        a.model.display(),
        md.name,
        md.architecture,
        if engine.model().has_chat_template() {
            ", chat template"
        } else {
            ", no chat template: prompts are the messages one after the other"
        },
        started.elapsed().as_secs_f64()
    );
    let opts = ServeOptions {
        logprobs: !a.no_logprobs,
        max_queue: a.max_queue,
        max_tokens: a.max_tokens.clamp(1, MAX_TOKENS_CAP),
        allow_remote: a.allow_remote,
    };
    let label = engine.label().to_owned();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(model_serve::bind_and_serve(
        a.listen,
        engine,
        opts,
        |bound| {
            println!(
                "serving {label} at http://{bound}/v1 (POST /v1/chat/completions, GET /v1/models); \
                 Ctrl-C stops it"
            );
        },
        async {
            let _ = tokio::signal::ctrl_c().await;
        },
    ))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "local-judge"))]
fn serve(_: ServeArgs) -> Result<ExitCode> {
    anyhow::bail!(
        "panel model serve runs the in-process model engine, which this panel was built \
         without: build it with cargo build --release -p panel-cli --features local-judge \
         (docs/JUDGES.md \"panel model serve\")"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        command: Command,
    }

    #[test]
    fn serve_parses_its_flags_and_refuses_unknown_weights() {
        let Cli {
            command: Command::Serve(a),
        } = Cli::try_parse_from(["panel", "serve", "--model", "m.gguf", "--no-logprobs"]).unwrap();
        assert_eq!(a.listen.to_string(), "127.0.0.1:8081");
        assert_eq!((a.weights.as_str(), a.no_logprobs), ("auto", true));
        assert!(
            Cli::try_parse_from(["panel", "serve", "--model", "m", "--weights", "q4"]).is_err()
        );
    }

    /// Without the feature the command exists and says how to get it.
    #[cfg(not(feature = "local-judge"))]
    #[test]
    fn without_the_engine_the_command_says_how_to_build_it() {
        let Cli {
            command: Command::Serve(a),
        } = Cli::try_parse_from(["panel", "serve", "--model", "m.gguf"]).unwrap();
        let e = serve(a).unwrap_err().to_string();
        assert!(e.contains("--features local-judge"), "{e}");
    }
}
