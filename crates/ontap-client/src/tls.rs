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

use super::config::{CertificateFingerprint, TlsVerification};
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
        TlsVerification::Pinned(fingerprint) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(CertificateCheck::pinned(
                *fingerprint,
                provider,
            )))
            .with_no_client_auth(),
        TlsVerification::InsecureSkipVerify => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(CertificateCheck::any(provider)))
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

/// The two verifiers rustls' own cannot express. `Pinned` trusts exactly one certificate: when
/// the server's own certificate carries the fingerprint (ONTAP's self-signed default), the pin is
/// the whole trust decision, as its name and dates are whatever the cluster was installed with;
/// when a CA certificate of the presented chain carries it, the server's certificate must verify
/// against that CA as its only root, name and dates included. `AnyCertificate` accepts every
/// certificate. Both still check handshake signatures, so the connection is at least
/// consistently encrypted with the presented key.
#[derive(Debug)]
struct CertificateCheck {
    pin: Option<CertificateFingerprint>,
    provider: Arc<CryptoProvider>,
}

impl CertificateCheck {
    fn pinned(pin: CertificateFingerprint, provider: Arc<CryptoProvider>) -> Self {
        Self {
            pin: Some(pin),
            provider,
        }
    }

    fn any(provider: Arc<CryptoProvider>) -> Self {
        Self {
            pin: None,
            provider,
        }
    }
}

impl ServerCertVerifier for CertificateCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(pin) = self.pin else {
            return Ok(ServerCertVerified::assertion());
        };
        if CertificateFingerprint::of(end_entity) == pin {
            return Ok(ServerCertVerified::assertion());
        }
        let Some(ca) = intermediates
            .iter()
            .find(|c| CertificateFingerprint::of(c) == pin)
        else {
            return Err(rustls::Error::General(format!(
                "no certificate the server presented has the pinned fingerprint {pin}"
            )));
        };
        let mut roots = RootCertStore::empty();
        roots
            .add(ca.clone().into_owned())
            .map_err(|e| rustls::Error::General(format!("pinned CA certificate: {e}")))?;
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            self.provider.clone(),
        )
        .build()
        .map_err(|e| rustls::Error::General(format!("pinned CA certificate: {e}")))?;
        verifier.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
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
            &self.provider.signature_verification_algorithms,
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
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
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
