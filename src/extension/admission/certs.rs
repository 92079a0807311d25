//! The webhook's serving certificate and the CA the garden trusts it by, kept in one Secret of
//! the runtime cluster so that every replica serves the same, and renewed before they expire —
//! as Gardener's extension webhooks keep theirs, with no certificate manager to install.
//!
//! A CA is replaced without a moment in which the garden distrusts what is served: the new CA
//! first joins the bundle the webhook configuration carries (the previous one stays in it until
//! it expires), and only once that bundle has been published for a while does a serving
//! certificate signed by the new CA replace the old one.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use secrecy::{ExposeSecret, SecretString};

const CA_CERT: &str = "ca.crt";
const CA_KEY: &str = "ca.key";
const PREVIOUS_CA_CERT: &str = "previous-ca.crt";
const TLS_CERT: &str = "tls.crt";
const TLS_KEY: &str = "tls.key";
const CA_NOT_AFTER: &str = "admission.ontap.extensions.storage.dev/ca-not-after";
const PREVIOUS_CA_NOT_AFTER: &str = "admission.ontap.extensions.storage.dev/previous-ca-not-after";
const TLS_NOT_AFTER: &str = "admission.ontap.extensions.storage.dev/tls-not-after";
/// The CA that signed the serving certificate, by its expiry (each CA has its own).
const TLS_SIGNED_BY: &str = "admission.ontap.extensions.storage.dev/tls-signed-by";
const TLS_NAMES: &str = "admission.ontap.extensions.storage.dev/tls-names";
/// When the bundle holding the current CA was first published to the garden.
const CA_PUBLISHED: &str = "admission.ontap.extensions.storage.dev/ca-published";

#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("reading or writing the certificate Secret {name}: {source}")]
    Kube {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("the certificate Secret {0} changed meanwhile (another replica renewed it)")]
    Conflict(String),
    #[error("making a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("the certificate Secret {name} is damaged: {what}")]
    Damaged { name: String, what: String },
}

/// Lifetimes and names of what is issued.
#[derive(Clone, Debug)]
pub struct Policy {
    pub ca_validity: Duration,
    pub certificate_validity: Duration,
    /// The names (DNS or IP) the serving certificate is valid for.
    pub names: Vec<String>,
    /// How long a new CA stays in the published bundle before it signs: the garden's API
    /// servers read webhook configurations through their caches, which this must outlast.
    pub publication_grace: Duration,
}

/// What a replica serves and what the garden must trust.
#[derive(Clone)]
pub struct Served {
    pub cert_pem: String,
    pub key_pem: SecretString,
    /// The current CA and, while it is valid, the previous one.
    pub bundle_pem: String,
    /// Whether the bundle's newest CA still has to be marked published.
    pub unpublished: bool,
}

/// The certificate Secret of one namespace.
pub struct Store {
    api: Api<Secret>,
    name: String,
    policy: Policy,
}

impl Store {
    pub fn new(client: Client, namespace: &str, name: &str, policy: Policy) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            name: name.to_owned(),
            policy,
        }
    }

    /// Makes the Secret hold a CA and a serving certificate that are not about to expire,
    /// renewing what needs it, and returns what to serve. A renewal another replica wrote
    /// first is a conflict: the caller reads again.
    pub async fn ensure(&self, now: SystemTime) -> Result<Served, CertError> {
        let existing = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|e| self.kube(e))?;
        let Some(mut secret) = existing else {
            let secret = self.issue_all(now)?;
            return match self.api.create(&PostParams::default(), &secret).await {
                Ok(created) => self.served(&created),
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    Err(CertError::Conflict(self.name.clone()))
                }
                Err(e) => Err(self.kube(e)),
            };
        };
        let renewed = match self.renew(&mut secret, now) {
            Ok(renewed) => renewed,
            // Not what this module writes (edited by hand, or cut short): start over, keeping
            // the object so the write stays conditional on what was read.
            Err(CertError::Damaged { what, .. }) => {
                tracing::warn!(secret = %self.name, problem = %what, "the certificate Secret is damaged; issuing a new CA and certificate");
                let fresh = self.issue_all(now)?;
                secret.data = fresh.data;
                secret.metadata.annotations = fresh.metadata.annotations;
                true
            }
            Err(e) => return Err(e),
        };
        if renewed {
            return match self
                .api
                .replace(&self.name, &PostParams::default(), &secret)
                .await
            {
                Ok(replaced) => self.served(&replaced),
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    Err(CertError::Conflict(self.name.clone()))
                }
                Err(e) => Err(self.kube(e)),
            };
        }
        self.served(&secret)
    }

    /// Records that the garden's webhook configuration carries the bundle with the current CA.
    pub async fn mark_published(&self, now: SystemTime) -> Result<(), CertError> {
        let Some(mut secret) = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|e| self.kube(e))?
        else {
            return Ok(());
        };
        let annotations = secret
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new);
        if annotations.contains_key(CA_PUBLISHED) {
            return Ok(());
        }
        annotations.insert(CA_PUBLISHED.into(), seconds(now).to_string());
        match self
            .api
            .replace(&self.name, &PostParams::default(), &secret)
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                Err(CertError::Conflict(self.name.clone()))
            }
            Err(e) => Err(self.kube(e)),
        }
    }

    /// A new Secret: a CA and a serving certificate it signed. Nothing served yet needs the new
    /// CA published first.
    fn issue_all(&self, now: SystemTime) -> Result<Secret, CertError> {
        let mut secret = Secret {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                ..ObjectMeta::default()
            },
            type_: Some("Opaque".into()),
            ..Secret::default()
        };
        self.new_ca(&mut secret, now)?;
        annotate(&mut secret, CA_PUBLISHED, seconds(now));
        self.new_certificate(&mut secret, now)?;
        Ok(secret)
    }

    /// Renews in place what needs it; whether anything changed.
    fn renew(&self, secret: &mut Secret, now: SystemTime) -> Result<bool, CertError> {
        let mut changed = false;
        let ca_not_after = self.number(secret, CA_NOT_AFTER)?;
        if ca_not_after.saturating_sub(seconds(now)) < self.policy.ca_validity.as_secs() / 3 {
            // The current CA becomes the previous one, trusted until it expires.
            let data = secret.data.get_or_insert_with(BTreeMap::new);
            if let Some(ca) = data.get(CA_CERT).cloned() {
                data.insert(PREVIOUS_CA_CERT.into(), ca);
                annotate(secret, PREVIOUS_CA_NOT_AFTER, ca_not_after);
            }
            self.new_ca(secret, now)?;
            if let Some(a) = secret.metadata.annotations.as_mut() {
                a.remove(CA_PUBLISHED);
            }
            changed = true;
        }
        if self
            .number(secret, PREVIOUS_CA_NOT_AFTER)
            .is_ok_and(|t| t <= seconds(now))
        {
            if let Some(data) = secret.data.as_mut() {
                data.remove(PREVIOUS_CA_CERT);
            }
            if let Some(a) = secret.metadata.annotations.as_mut() {
                a.remove(PREVIOUS_CA_NOT_AFTER);
            }
            changed = true;
        }
        let current_ca = self.number(secret, CA_NOT_AFTER)?;
        let published_long_enough = self.number(secret, CA_PUBLISHED).is_ok_and(|at| {
            seconds(now).saturating_sub(at) >= self.policy.publication_grace.as_secs()
        });
        let signed_by_old_ca = self.number(secret, TLS_SIGNED_BY).ok() != Some(current_ca);
        let expiring = self.number(secret, TLS_NOT_AFTER).map_or(true, |t| {
            t.saturating_sub(seconds(now)) < self.policy.certificate_validity.as_secs() / 3
        });
        let renamed = annotation(secret, TLS_NAMES) != Some(self.policy.names.join(","));
        if (expiring || renamed || signed_by_old_ca) && (!signed_by_old_ca || published_long_enough)
        {
            self.new_certificate(secret, now)?;
            changed = true;
        }
        Ok(changed)
    }

    fn new_ca(&self, secret: &mut Secret, now: SystemTime) -> Result<(), CertError> {
        let key = KeyPair::generate()?;
        let not_after = now + self.policy.ca_validity;
        let cert = ca_params(not_after, now).self_signed(&key)?;
        let data = secret.data.get_or_insert_with(BTreeMap::new);
        data.insert(CA_CERT.into(), ByteString(cert.pem().into_bytes()));
        data.insert(CA_KEY.into(), ByteString(key.serialize_pem().into_bytes()));
        annotate(secret, CA_NOT_AFTER, seconds(not_after));
        Ok(())
    }

    fn new_certificate(&self, secret: &mut Secret, now: SystemTime) -> Result<(), CertError> {
        let ca_not_after = self.number(secret, CA_NOT_AFTER)?;
        let ca_key = KeyPair::from_pem(&self.text(secret, CA_KEY)?)?;
        // The CA's name and key are what a signature carries: its parameters are made again
        // rather than parsed back from its certificate.
        let issuer = Issuer::new(ca_params(from_seconds(ca_not_after), now), ca_key);
        let not_after = (now + self.policy.certificate_validity).min(from_seconds(ca_not_after));
        let mut params = CertificateParams::new(self.policy.names.clone())?;
        params.distinguished_name = name("gardener-extension-ontap-admission");
        params.not_before = (now - Duration::from_secs(300)).into();
        params.not_after = not_after.into();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        let data = secret.data.get_or_insert_with(BTreeMap::new);
        data.insert(TLS_CERT.into(), ByteString(cert.pem().into_bytes()));
        data.insert(TLS_KEY.into(), ByteString(key.serialize_pem().into_bytes()));
        annotate(secret, TLS_NOT_AFTER, seconds(not_after));
        annotate(secret, TLS_SIGNED_BY, ca_not_after);
        let names = self.policy.names.join(",");
        secret
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(TLS_NAMES.into(), names);
        Ok(())
    }

    fn served(&self, secret: &Secret) -> Result<Served, CertError> {
        let mut bundle_pem = self.text(secret, CA_CERT)?;
        if let Ok(previous) = self.text(secret, PREVIOUS_CA_CERT) {
            bundle_pem.push_str(&previous);
        }
        Ok(Served {
            cert_pem: self.text(secret, TLS_CERT)?,
            key_pem: SecretString::from(self.text(secret, TLS_KEY)?),
            bundle_pem,
            unpublished: annotation(secret, CA_PUBLISHED).is_none(),
        })
    }

    fn text(&self, secret: &Secret, key: &str) -> Result<String, CertError> {
        let bytes = secret
            .data
            .as_ref()
            .and_then(|d| d.get(key))
            .ok_or_else(|| self.damaged(format!("no {key}")))?;
        String::from_utf8(bytes.0.clone()).map_err(|_| self.damaged(format!("{key} is not PEM")))
    }

    fn number(&self, secret: &Secret, key: &str) -> Result<u64, CertError> {
        annotation(secret, key)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| self.damaged(format!("no number in the annotation {key}")))
    }

    fn damaged(&self, what: String) -> CertError {
        CertError::Damaged {
            name: self.name.clone(),
            what,
        }
    }

    fn kube(&self, source: kube::Error) -> CertError {
        CertError::Kube {
            name: self.name.clone(),
            source,
        }
    }
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"[REDACTED]")
            .field("unpublished", &self.unpublished)
            .finish()
    }
}

fn ca_params(not_after: SystemTime, now: SystemTime) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = name("gardener-extension-ontap-admission-ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.not_before = (now - Duration::from_secs(300)).into();
    params.not_after = not_after.into();
    params
}

fn name(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    name
}

fn annotate(secret: &mut Secret, key: &str, value: u64) {
    secret
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(key.into(), value.to_string());
}

fn annotation(secret: &Secret, key: &str) -> Option<String> {
    secret.metadata.annotations.as_ref()?.get(key).cloned()
}

fn seconds(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn from_seconds(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(s)
}

/// The key in PEM, for a TLS server.
pub fn key_pem(served: &Served) -> &str {
    served.key_pem.expose_secret()
}
