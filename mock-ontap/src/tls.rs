//! A self-signed certificate made at start, so clients can verify TLS against a file instead
//! of skipping verification.

use std::sync::Arc;

use anyhow::Context;
use tokio_rustls::rustls::{
    self, ServerConfig,
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer},
};

/// Names a client may use to reach the mock on this machine.
pub const SUBJECT_ALT_NAMES: &[&str] = &["127.0.0.1", "::1", "localhost"];

#[derive(Clone)]
pub struct TlsIdentity {
    cert_pem: String,
    cert_der: CertificateDer<'static>,
    key_der: Vec<u8>,
}

impl TlsIdentity {
    pub fn self_signed() -> anyhow::Result<Self> {
        Self::self_signed_for(None)
    }

    /// Also valid for `listen` when that is a specific address other than loopback: Pods on a
    /// local node reach the mock at its bridge address, and verify it like any client.
    pub fn self_signed_for(listen: Option<std::net::IpAddr>) -> anyhow::Result<Self> {
        let mut names: Vec<String> = SUBJECT_ALT_NAMES.iter().map(|s| (*s).to_owned()).collect();
        if let Some(ip) = listen.filter(|ip| !ip.is_loopback() && !ip.is_unspecified()) {
            names.push(ip.to_string());
        }
        let certified =
            rcgen::generate_simple_self_signed(names).context("generating a certificate")?;
        Ok(Self {
            cert_pem: certified.cert.pem(),
            cert_der: certified.cert.der().clone(),
            key_der: certified.signing_key.serialize_der(),
        })
    }

    /// The certificate a client must trust, PEM-encoded.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// A rustls server config using the `ring` provider explicitly, so it works even when
    /// another crate in the build enables a second provider.
    pub fn server_config(&self) -> anyhow::Result<Arc<ServerConfig>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()));
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?
            .with_no_client_auth()
            .with_single_cert(vec![self.cert_der.clone()], key)
            .context("TLS certificate")?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}
