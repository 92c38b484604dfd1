//! What can be wrong with a process's transport security, each with the fix named.

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("cannot read {what} at {path}: {source}")]
    File {
        path: String,
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "half-configured TLS in {dir}: {present} is there but {missing} is not; an identity needs both \
         (issue them with `panel pki init`, or remove {present} to connect as an anonymous reader)"
    )]
    HalfIdentity {
        dir: String,
        present: &'static str,
        missing: &'static str,
    },
    #[error(
        "{dir} holds no certificate and key ({what} needs an identity of its own); issue one with `panel pki init`"
    )]
    NoIdentity { dir: String, what: &'static str },
    #[error("the federation charter {path} is not valid: {problem}")]
    Charter { path: String, problem: String },
    #[error(
        "no transport security configured: give --tls DIR (ca.pem, cert.pem, key.pem from `panel pki init`) \
         and --charter FILE, or --insecure-loopback for a debug cluster on 127.0.0.1"
    )]
    Unconfigured,
    #[error("--insecure-loopback and --tls exclude each other: choose one")]
    Both,
    #[error(
        "--insecure-loopback refuses {addr}: plaintext is allowed on loopback addresses only; \
         use --tls DIR for any other address"
    )]
    NotLoopback { addr: String },
    #[error(
        "{what} needs the federation charter: give --charter FILE (written by `panel pki init`)"
    )]
    NoCharter { what: &'static str },
    #[error("{addr:?} is not a usable address ({reason}); use host:port, e.g. 127.0.0.1:7001")]
    BadAddress { addr: String, reason: String },
    #[error(
        "replica {id} is not in the federation charter (replicas[].id), so no certificate can be \
         expected of it; an operator lists it in the charter before it joins the group"
    )]
    UnknownReplica { id: u64 },
    #[error(
        "the federation's authorities in {dir}/ca.pem cannot check a server ({problem}); copy \
         the federation's ca.pem there (written by `panel pki init`)"
    )]
    Roots { dir: String, problem: String },
    #[error(
        "the identity in {dir} cannot serve TLS ({problem}); reissue it with `panel pki issue`"
    )]
    ServerIdentity { dir: String, problem: String },
    #[error("TLS setup failed: {0}")]
    Tls(#[from] tonic::transport::Error),
    #[error("certificate generation failed: {0}")]
    Issue(#[from] rcgen::Error),
}
