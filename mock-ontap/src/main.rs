use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Parser;
use mock_ontap::{MockConfig, MockState, TlsIdentity};
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
#[command(
    name = "mock-ontap",
    version,
    about = "A fake NetApp ONTAP REST server with a fault-injection API, for tests"
)]
struct Cli {
    /// Address to listen on; port 0 picks a free port (see --ready-file).
    #[arg(long, env = "MOCK_ONTAP_LISTEN", default_value = "127.0.0.1:8443")]
    listen: SocketAddr,
    /// Cluster admin user name [default: admin, or the config file's].
    #[arg(long, env = "MOCK_ONTAP_ADMIN_USER")]
    admin_user: Option<String>,
    /// Cluster admin password [default: Netapp1!, or the config file's].
    #[arg(long, env = "MOCK_ONTAP_ADMIN_PASSWORD", hide_env_values = true)]
    admin_password: Option<String>,
    /// Serve plain HTTP instead of HTTPS.
    #[arg(long)]
    insecure_http: bool,
    /// Write the generated self-signed certificate (PEM) here, for clients to trust.
    #[arg(long, value_name = "FILE", conflicts_with = "insecure_http")]
    tls_cert_out: Option<PathBuf>,
    /// Once listening, write the bound address (e.g. 127.0.0.1:40123) to this file.
    #[arg(long, value_name = "FILE")]
    ready_file: Option<PathBuf>,
    /// Initial cluster and settings, YAML or JSON (see README.md).
    #[arg(long, value_name = "FILE", env = "MOCK_ONTAP_CONFIG")]
    config: Option<PathBuf>,
    /// Duration of every SVM job, in milliseconds.
    #[arg(long, value_name = "MS")]
    job_duration_ms: Option<u64>,
    /// How long a finished job stays readable, in milliseconds.
    #[arg(long, value_name = "MS")]
    job_expiry_ms: Option<u64>,
    /// SVM jobs allowed in flight at once (0 = unlimited).
    #[arg(long, value_name = "N")]
    max_concurrent_svm_jobs: Option<usize>,
}

impl Cli {
    fn config(&self) -> anyhow::Result<MockConfig> {
        let mut config = match &self.config {
            Some(path) => MockConfig::from_file(path)?,
            None => MockConfig::default(),
        };
        if let Some(user) = &self.admin_user {
            config.admin.user.clone_from(user);
        }
        if let Some(password) = &self.admin_password {
            config.admin.password.clone_from(password);
        }
        let settings = &mut config.settings;
        if let Some(ms) = self.job_duration_ms {
            settings.job_duration_ms = ms;
        }
        if let Some(ms) = self.job_expiry_ms {
            settings.job_expiry_ms = ms;
        }
        if let Some(n) = self.max_concurrent_svm_jobs {
            settings.max_concurrent_svm_jobs = n;
        }
        Ok(config)
    }
}

/// Writes via a temporary file and a rename, so a script polling for the file never reads it
/// half-written.
fn write_atomically(path: &Path, contents: &str) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, contents).with_context(|| format!("writing {}", path.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        // stdout carries only the "listening on" line, for scripts that read it.
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let config = cli.config()?;
    let state = MockState::new(config)?;

    let tls = if cli.insecure_http {
        None
    } else {
        let identity = TlsIdentity::self_signed_for(Some(cli.listen.ip()))?;
        if let Some(path) = &cli.tls_cert_out {
            write_atomically(path, identity.cert_pem())?;
        }
        Some(identity.server_config()?)
    };
    let listener = tokio::net::TcpListener::bind(cli.listen)
        .await
        .with_context(|| format!("binding {}", cli.listen))?;
    let addr = listener.local_addr()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    tracing::info!(%addr, "mock-ontap listening");
    println!("mock-ontap listening on {scheme}://{addr}");
    if let Some(path) = &cli.ready_file {
        write_atomically(path, &addr.to_string())?;
    }

    let shutdown = CancellationToken::new();
    let on_signal = shutdown.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_signal.cancel();
        }
    });
    mock_ontap::serve(listener, state, tls, shutdown).await?;
    Ok(())
}
