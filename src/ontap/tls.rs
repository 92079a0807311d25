//! The rustls configuration handed to reqwest.
//!
//! Built here rather than by reqwest so the crypto provider is ring, as for kube, whatever
//! process-wide default another component installs, and so the three verification modes are
//! explicit rather than spread over reqwest's builder flags.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::config::TlsVerification;
use super::error::OntapError;

pub(crate) fn client_config(tls: &TlsVerification) -> Result<rustls::ClientConfig, OntapError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| OntapError::Config(format!("TLS protocol versions: {e}")))?;
    let mut config = match tls {
        TlsVerification::System => {
            let verifier = rustls_platform_verifier::Verifier::new(provider)
                .map_err(|e| OntapError::Config(format!("system trust store: {e}")))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier))
                .with_no_client_auth()
        }
        TlsVerification::CaBundle(pem) => builder
            .with_root_certificates(root_store(pem)?)
            .with_no_client_auth(),
        TlsVerification::InsecureSkipVerify => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
            .with_no_client_auth(),
    };
    // reqwest leaves ALPN to a preconfigured config; the client speaks HTTP/1.1 only.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The CAs of a PEM bundle; a bundle without any certificate is an error rather than a client
/// that trusts nothing and fails every handshake with a confusing message.
pub(crate) fn root_store(pem: &[u8]) -> Result<RootCertStore, OntapError> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| OntapError::Config(format!("CA bundle: {e}")))?;
        roots
            .add(cert)
            .map_err(|e| OntapError::Config(format!("CA bundle: {e}")))?;
    }
    if roots.is_empty() {
        return Err(OntapError::Config(
            "CA bundle contains no PEM certificate".into(),
        ));
    }
    Ok(roots)
}

/// Accepts any server certificate, but still checks handshake signatures so the connection is
/// at least consistently encrypted with the presented key.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn empty_or_garbage_ca_bundle_is_a_config_error() {
        assert!(matches!(root_store(b""), Err(OntapError::Config(_))));
        assert!(matches!(
            root_store(b"not a certificate"),
            Err(OntapError::Config(_))
        ));
        assert!(matches!(
            client_config(&TlsVerification::CaBundle(b"x".to_vec())),
            Err(OntapError::Config(_))
        ));
    }

    #[test]
    fn insecure_and_system_configs_build() {
        client_config(&TlsVerification::InsecureSkipVerify).unwrap();
        // The platform verifier may find no roots in a minimal container; building must not panic.
        let _ = client_config(&TlsVerification::System);
    }
}
