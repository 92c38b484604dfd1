//! A small static file server on loopback: the "sources" that arbiters retrieve when
//! they verify a citation's tier (SPEC section 5: verification means retrieval). It
//! serves files under one directory for `GET /<path>`; anything else gets 404 or 405.

use std::path::{Component, Path, PathBuf};

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A running server; dropping the handle does not stop it, `abort` does.
pub struct SourceServer {
    pub base_url: String,
    task: tokio::task::JoinHandle<()>,
}

impl SourceServer {
    /// Binds an ephemeral loopback port and serves `root`.
    pub async fn start(root: PathBuf) -> anyhow::Result<SourceServer> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the source server on loopback")?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let root = root.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, &root).await;
                });
            }
        });
        Ok(SourceServer {
            base_url: format!("http://{addr}"),
            task,
        })
    }

    pub fn abort(&self) {
        self.task.abort();
    }
}

/// Maps a request path to a file under `root`, refusing `..` and absolute parts.
fn resolve(root: &Path, path: &str) -> Option<PathBuf> {
    let rel = Path::new(path.trim_start_matches('/'));
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return None;
    }
    Some(root.join(rel))
}

async fn serve(mut stream: TcpStream, root: &Path) -> std::io::Result<()> {
    let mut buf = vec![0u8; 8192];
    let mut len = 0;
    while !buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
        if len == buf.len() {
            return respond(&mut stream, 431, "text/plain", b"request header too large").await;
        }
        let n = stream.read(&mut buf[len..]).await?;
        if n == 0 {
            return Ok(());
        }
        len += n;
    }
    let head = String::from_utf8_lossy(&buf[..len]);
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
    if method != "GET" {
        return respond(&mut stream, 405, "text/plain", b"only GET is served").await;
    }
    match resolve(root, path) {
        Some(file) => match tokio::fs::read(&file).await {
            Ok(bytes) => respond(&mut stream, 200, "text/plain; charset=utf-8", &bytes).await,
            Err(_) => respond(&mut stream, 404, "text/plain", b"no such source").await,
        },
        None => respond(&mut stream, 404, "text/plain", b"no such source").await,
    }
}

async fn respond(
    stream: &mut TcpStream,
    code: u16,
    ctype: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let reason = match code {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Request Header Fields Too Large",
    };
    let head = format!(
        "HTTP/1.1 {code} {reason}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_cannot_escape_the_root() {
        let root = Path::new("/srv/sources");
        assert_eq!(resolve(root, "/a.txt"), Some(root.join("a.txt")));
        assert_eq!(resolve(root, "/../etc/passwd"), None);
        assert_eq!(resolve(root, "/x/../../y"), None);
    }
}
