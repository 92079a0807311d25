//! A TCP proxy that can black-hole its connections: bytes stop flowing both ways while every
//! socket stays open, as when a network path silently drops packets. A killed peer is noticed
//! at once; this is the failure only timeouts reveal.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct BlackHole {
    pub address: SocketAddr,
    cut: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut cut: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            _ = cut.wait_for(|cut| *cut) => break,
        };
        if *cut.borrow() {
            break;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
    // Hold both halves open, silent, for ever.
    std::future::pending::<()>().await;
    drop((from, to));
}

impl BlackHole {
    /// Forwards every connection to `target` until [`BlackHole::cut`].
    pub async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (cut, _) = watch::channel(false);
        let cuts = cut.clone();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                if *cuts.borrow() {
                    held.push(client);
                    continue;
                }
                let Ok(upstream) = TcpStream::connect(target).await else {
                    continue;
                };
                let (client_read, client_write) = client.into_split();
                let (upstream_read, upstream_write) = upstream.into_split();
                tokio::spawn(pump(client_read, upstream_write, cuts.subscribe()));
                tokio::spawn(pump(upstream_read, client_write, cuts.subscribe()));
            }
        });
        Self { address, cut, task }
    }

    /// From now on nothing passes, in either direction, on old and new connections alike.
    pub fn cut(&self) {
        let _ = self.cut.send(true);
    }

    /// A copy of `kubeconfig` whose API server is reached through this proxy; the server's
    /// certificate is for 127.0.0.1, which the proxy also is.
    pub fn kubeconfig(&self, kubeconfig: &Path) -> PathBuf {
        let text = std::fs::read_to_string(kubeconfig).unwrap();
        let mut config: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        config["clusters"][0]["cluster"]["server"] =
            serde_yaml::Value::from(format!("https://{}", self.address));
        let out =
            kubeconfig.with_file_name(format!("blackhole-{}.kubeconfig", self.address.port()));
        std::fs::write(&out, serde_yaml::to_string(&config).unwrap()).unwrap();
        out
    }
}

impl Drop for BlackHole {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The API server's address in `kubeconfig`.
pub fn api_server(kubeconfig: &Path) -> SocketAddr {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let config: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let url =
        reqwest::Url::parse(config["clusters"][0]["cluster"]["server"].as_str().unwrap()).unwrap();
    format!("{}:{}", url.host_str().unwrap(), url.port().unwrap())
        .parse()
        .unwrap()
}
