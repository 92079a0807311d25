use std::net::SocketAddr;

use anyhow::Context;
use clap::Parser;

#[derive(Parser)]
#[command(
    name = "mock-ontap",
    version,
    about = "A fake NetApp ONTAP REST server for tests"
)]
struct Cli {
    /// Address to listen on.
    #[arg(long, env = "MOCK_ONTAP_LISTEN", default_value = "127.0.0.1:8443")]
    listen: SocketAddr,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let cli = Cli::parse();
    let listener = tokio::net::TcpListener::bind(cli.listen)
        .await
        .with_context(|| format!("binding {}", cli.listen))?;
    tracing::info!(address = %listener.local_addr()?, "mock-ontap listening");
    axum::serve(
        listener,
        mock_ontap::router(mock_ontap::MockState::new("mock-cluster")),
    )
    .await?;
    Ok(())
}
