//! Configuration of an [`OntapClient`](super::OntapClient).

use std::fmt;
use std::time::Duration;

use reqwest::Url;
use secrecy::SecretString;

use super::metrics::OntapMetrics;
use super::trace::{TraceparentFn, otel_traceparent};

/// Basic-auth credentials. The password stays a [`SecretString`] until the header is built.
#[derive(Clone)]
pub struct Credentials {
    pub username: String,
    pub password: SecretString,
}

impl Credentials {
    pub fn new(username: impl Into<String>, password: impl Into<SecretString>) -> Self {
        Self {
            username: username.into(),
            password: password.into(),
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"[REDACTED]")
            .finish()
    }
}

/// How TLS server certificates are checked.
#[derive(Clone, Default)]
pub enum TlsVerification {
    /// The platform's trust store.
    #[default]
    System,
    /// Only the CAs in this PEM bundle (a cluster's self-signed certificate, a private CA).
    CaBundle(Vec<u8>),
    /// Only a certificate with this SHA-256 fingerprint: the server's own (a self-signed
    /// cluster certificate), or a CA certificate of the presented chain that signed it.
    Pinned(CertificateFingerprint),
    /// No verification at all. The credentials can then be intercepted; the client logs a
    /// warning when it is built this way.
    InsecureSkipVerify,
}

/// A SHA-256 certificate fingerprint.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CertificateFingerprint(pub [u8; 32]);

impl CertificateFingerprint {
    /// Of a DER-encoded certificate.
    pub fn of(der: &[u8]) -> Self {
        let digest = ring::digest::digest(&ring::digest::SHA256, der);
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(digest.as_ref());
        Self(bytes)
    }
}

impl std::str::FromStr for CertificateFingerprint {
    type Err = String;

    /// Hex as openssl prints it (`AB:CD:…`), colons optional, either case.
    fn from_str(text: &str) -> Result<Self, String> {
        let hex: String = text.chars().filter(|c| *c != ':').collect();
        let invalid = || format!("{text:?} is not a SHA-256 fingerprint (32 bytes in hex)");
        if hex.len() != 64 || !hex.is_ascii() {
            return Err(invalid());
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| invalid())?;
        }
        Ok(Self(bytes))
    }
}

impl fmt::Display for CertificateFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex: Vec<String> = self.0.iter().map(|b| format!("{b:02X}")).collect();
        f.write_str(&hex.join(":"))
    }
}

impl fmt::Debug for CertificateFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Debug for TlsVerification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::System => f.write_str("System"),
            Self::CaBundle(pem) => write!(f, "CaBundle({} bytes)", pem.len()),
            Self::Pinned(fingerprint) => write!(f, "Pinned({fingerprint})"),
            Self::InsecureSkipVerify => f.write_str("InsecureSkipVerify"),
        }
    }
}

impl TlsVerification {
    /// From the OntapCluster spec's settings, which admission allows one of at a time; should
    /// several arrive anyway (an object stored before the rule existed), skipping verification
    /// wins, as the user asked for it explicitly, then the pin, then the CA bundle.
    pub fn from_spec(
        ca_pem: Option<Vec<u8>>,
        fingerprint: Option<CertificateFingerprint>,
        insecure_skip_verify: bool,
    ) -> Self {
        match (insecure_skip_verify, fingerprint, ca_pem) {
            (true, _, _) => Self::InsecureSkipVerify,
            (false, Some(fingerprint), _) => Self::Pinned(fingerprint),
            (false, None, Some(pem)) => Self::CaBundle(pem),
            (false, None, None) => Self::System,
        }
    }

    /// Whether the server's identity is checked at all.
    pub fn verifies(&self) -> bool {
        !matches!(self, Self::InsecureSkipVerify)
    }
}

/// Polling of asynchronous jobs (answers 202).
#[derive(Clone, Debug)]
pub struct JobPollConfig {
    pub initial_interval: Duration,
    pub multiplier: f64,
    pub max_interval: Duration,
    /// Overall time to wait for a job before giving up with an ambiguous timeout.
    pub deadline: Duration,
}

impl Default for JobPollConfig {
    fn default() -> Self {
        Self {
            initial_interval: Duration::from_millis(200),
            multiplier: 1.5,
            max_interval: Duration::from_secs(2),
            deadline: Duration::from_secs(120),
        }
    }
}

/// Retries of idempotent requests after transient failures.
#[derive(Clone, Debug)]
pub struct RetryConfig {
    /// Attempts in total, the first included; 1 disables retries.
    pub max_attempts: usize,
    pub min_delay: Duration,
    pub max_delay: Duration,
    pub jitter: bool,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            min_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(2),
            jitter: true,
        }
    }
}

/// Everything needed to talk to one ONTAP cluster.
#[derive(Clone, Debug)]
pub struct OntapConfig {
    /// The cluster management LIF, e.g. `https://10.0.0.10`. Paths are resolved against it.
    pub endpoint: Url,
    pub credentials: Credentials,
    pub tls: TlsVerification,
    /// Per attempt, from sending the request to the end of the answer's body.
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// Requests in flight to this cluster at once; NetApp's own driver uses 20.
    pub max_concurrent_requests: usize,
    pub job_poll: JobPollConfig,
    pub retry: RetryConfig,
    /// Larger answers are refused (a typed error) instead of filling memory.
    pub max_response_bytes: usize,
    /// Page size asked for on collection GETs.
    pub page_size: u32,
    /// The HTTP(S) proxy requests go through. `None`: straight to the cluster, whatever
    /// `HTTPS_PROXY` says: an operator-wide proxy variable meant for other traffic must not
    /// route cluster-admin credentials through a third party unasked.
    pub proxy: Option<Url>,
    /// Where per-request metrics go; none when `None`.
    pub metrics: Option<OntapMetrics>,
    /// Builds the W3C `traceparent` header of each request from its span.
    pub traceparent: TraceparentFn,
}

impl OntapConfig {
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
    pub const DEFAULT_MAX_CONCURRENT: usize = 20;
    /// A page of 500 records of the fields the operator asks for is a few hundred KiB; far more
    /// is a proxy or a fault streaming without end, and is refused before it fills memory.
    pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 2 * 1024 * 1024;

    /// A configuration with the defaults: system trust store, 30 s timeout, 20 requests at once.
    pub fn new(endpoint: Url, credentials: Credentials) -> Self {
        Self {
            endpoint,
            credentials,
            tls: TlsVerification::default(),
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
            connect_timeout: Duration::from_secs(10),
            max_concurrent_requests: Self::DEFAULT_MAX_CONCURRENT,
            job_poll: JobPollConfig::default(),
            retry: RetryConfig::default(),
            max_response_bytes: Self::DEFAULT_MAX_RESPONSE_BYTES,
            page_size: 500,
            proxy: None,
            metrics: None,
            traceparent: otel_traceparent,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const PW: &str = "Sup3rSecretPassw0rd";

    #[test]
    fn debug_of_config_and_credentials_hides_the_password() {
        let mut cfg = OntapConfig::new(
            Url::parse("https://10.0.0.1").unwrap(),
            Credentials::new("admin", PW.to_owned()),
        );
        cfg.tls = TlsVerification::CaBundle(b"-----BEGIN CERTIFICATE-----".to_vec());
        let s = format!("{cfg:?} {:?} {:#?}", cfg.credentials, cfg);
        assert!(!s.contains(PW), "{s}");
        assert!(s.contains("admin"));
        assert!(s.contains("REDACTED"));
    }

    #[test]
    fn tls_from_spec_prefers_the_explicit_insecure_flag() {
        let pin = CertificateFingerprint([7; 32]);
        assert!(matches!(
            TlsVerification::from_spec(Some(vec![1]), Some(pin), true),
            TlsVerification::InsecureSkipVerify
        ));
        assert!(matches!(
            TlsVerification::from_spec(Some(vec![1]), Some(pin), false),
            TlsVerification::Pinned(_)
        ));
        assert!(matches!(
            TlsVerification::from_spec(Some(vec![1]), None, false),
            TlsVerification::CaBundle(_)
        ));
        assert!(matches!(
            TlsVerification::from_spec(None, None, false),
            TlsVerification::System
        ));
    }

    #[test]
    fn fingerprints_parse_in_openssl_and_plain_spelling() {
        let colons: CertificateFingerprint = ["aB"; 32].join(":").parse().unwrap();
        let plain: CertificateFingerprint = "AB".repeat(32).parse().unwrap();
        assert_eq!(colons, plain);
        assert_eq!(plain.to_string(), ["AB"; 32].join(":"));
        for bad in [
            "",
            "AB:CD",
            &"ZZ".repeat(32),
            &"AB".repeat(33),
            &"é".repeat(32),
        ] {
            assert!(bad.parse::<CertificateFingerprint>().is_err(), "{bad:?}");
        }
        let der = b"not really a certificate";
        assert_eq!(
            CertificateFingerprint::of(der).0[..4],
            [0xd6, 0x18, 0x22, 0x55][..],
            "SHA-256 of the bytes"
        );
    }
}
