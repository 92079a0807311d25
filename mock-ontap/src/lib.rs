//! A fake NetApp ONTAP REST server for tests, with a fault-injection API.
//!
//! It models a small cluster (nodes, aggregates, ports) and the SVM lifecycle an operator drives:
//! SVMs created, changed and deleted through jobs, IP interfaces, SVM-scoped accounts, Basic auth
//! with per-SVM visibility. `/_mock` lets tests inject faults, inspect state and the request
//! log, and change timing. See README.md for the HTTP contract.
//!
//! In-process use:
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! let server = mock_ontap::MockServer::start_tls(mock_ontap::MockConfig::default()).await?;
//! let url = server.base_url(); // https://127.0.0.1:PORT
//! let ca = server.cert_pem();  // Some(PEM) to trust
//! let admin = server.admin();  // admin / Netapp1!
//! # let _ = (url, ca, admin);
//! # Ok(()) }
//! ```

mod admin;
mod api;
mod app;
pub mod config;
mod connection;
mod credentials;
pub mod error;
mod faults;
mod middleware;
mod model;
mod query;
mod requests;
mod schema;
mod server;
mod state;
pub mod tls;

pub use app::router;
pub use config::{Credentials, DEFAULT_ADMIN_PASSWORD, DEFAULT_ADMIN_USER, MockConfig, Settings};
pub use faults::{FaultAction, FaultSpec};
pub use server::{MockServer, serve};
pub use state::MockState;
pub use tls::TlsIdentity;
