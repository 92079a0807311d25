//! `Extension.spec.providerConfig`: what a shoot asks of the ontap extension.
//!
//! Two kinds are accepted and resolved into one [`ExtensionConfig`]:
//!
//! - metal-stack's `ontap.metal.extensions.gardener.cloud/v1alpha1` `TridentConfig`, unchanged,
//!   so a shoot manifest written for metal-stack's extension works as it is. It carries only the
//!   SVM's addresses; everything else is what metal-stack's extension does: one SVM per
//!   metal-stack project, NVMe/TCP, all aggregates, the StorageClasses `ontap-gold` and
//!   `ontap-encrypted`. Like metal-stack's decoder, fields it does not know are ignored.
//! - this project's `ontap.extensions.storage.dev/v1alpha1` `OntapConfig`, with what the SVM API
//!   offers (cluster, sharing, protocols, aggregates, StorageClasses, Trident image, deletion
//!   policy). Unknown fields are errors here: a typo must not silently fall back to a default.
//!
//! Every problem is a [`ConfigError`] naming the field, which the controller reports as
//! `ERR_CONFIGURATION_PROBLEM` and does not retry until the Extension changes.
//!
//! ```yaml
//! apiVersion: ontap.extensions.storage.dev/v1alpha1
//! kind: OntapConfig
//! cluster: lab                 # OntapCluster; default: the operator's default cluster
//! svm:
//!   sharing: PerShoot          # or PerProject (metal-stack's layout)
//!   managementLif: {ip: 192.0.2.10, prefixLength: 24}
//!   dataLifs:                  # with several protocols, each names the one it serves
//!   - {ip: 192.0.2.11, prefixLength: 24, protocols: [nvme]}
//!   - {ip: 192.0.2.12, prefixLength: 24, protocols: [nfs]}
//!   aggregates: [aggr1]        # default: all data aggregates
//!   protocols: [nvme, nfs]     # nvme, iscsi, nfs; default [nvme]
//!   deletionPolicy: Delete     # or Retain: leave the SVM in ONTAP when the shoot goes
//! storageClasses:              # default: ontap-gold and ontap-encrypted (SAN) or ontap-nas
//! - name: ontap-gold
//!   encrypted: false
//!   default: false
//!   reclaimPolicy: Delete
//!   protocol: nvme             # default: the first protocol
//! trident:                     # only where the operator allows it (--extension-allow-shoot-images);
//!   operatorImage: registry.example/trident-operator:25.06.3   # default: the image vector's
//! ```

use std::collections::BTreeSet;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::rules::{DNS_SUBDOMAIN_MAX, DNS_SUBDOMAIN_MESSAGE};
use crate::api::{AccountRole, DeletionPolicy, RouteSpec, SvmLimitsSpec};

/// metal-stack's providerConfig group/version.
pub const METAL_STACK_API_VERSION: &str = "ontap.metal.extensions.gardener.cloud/v1alpha1";
/// metal-stack's providerConfig kind.
pub const METAL_STACK_KIND: &str = "TridentConfig";
/// This project's providerConfig group/version.
pub const API_VERSION: &str = "ontap.extensions.storage.dev/v1alpha1";
/// This project's providerConfig kind.
pub const KIND: &str = "OntapConfig";

use crate::api::MAX_DATA_LIFS;

/// Why a providerConfig cannot be used. The message names the field as the shoot owner wrote it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "providerConfig is missing: the ontap extension needs a {METAL_STACK_KIND} ({METAL_STACK_API_VERSION}) or an {KIND} ({API_VERSION})"
    )]
    Missing,
    #[error(
        "providerConfig has apiVersion {api_version:?} and kind {kind:?}; expected {KIND} ({API_VERSION}) or {METAL_STACK_KIND} ({METAL_STACK_API_VERSION})"
    )]
    UnknownKind { api_version: String, kind: String },
    /// The document does not decode: a wrong type, an unknown or missing field.
    #[error("providerConfig.{field}: {message}")]
    Malformed { field: String, message: String },
    /// It decodes, but a value is not acceptable.
    #[error("providerConfig.{field}: {message}")]
    Invalid { field: String, message: String },
}

impl ConfigError {
    /// The field the error is about, relative to the providerConfig (`svm.dataLifs[1].ip`);
    /// empty for the providerConfig as a whole.
    pub fn field(&self) -> &str {
        match self {
            Self::Missing => "",
            Self::UnknownKind { .. } => "kind",
            Self::Malformed { field, .. } if field == DOCUMENT => "",
            Self::Malformed { field, .. } | Self::Invalid { field, .. } => field,
        }
    }

    /// What is wrong, without the field.
    pub fn detail(&self) -> String {
        match self {
            Self::Malformed { message, .. } | Self::Invalid { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

/// Where the SVM comes from and who shares it.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub enum SvmSharing {
    /// An SVM of the shoot's own.
    #[default]
    PerShoot,
    /// One SVM per metal-stack project (the shoot's `cluster.metal-stack.io/project`
    /// annotation), shared by that project's shoots, one ONTAP account per shoot: metal-stack's
    /// layout, so an installation can switch without re-provisioning.
    PerProject,
}

/// A storage protocol of the SVM, and with it the Trident driver the shoot uses: `ontap-san`
/// with `sanType: nvme` or `iscsi`, `ontap-nas` for NFS.
pub use crate::api::Protocol;

/// A StorageClass's `reclaimPolicy`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub enum ReclaimPolicy {
    #[default]
    Delete,
    Retain,
}

/// An address with its subnet, resolved and checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lif {
    pub ip: IpAddr,
    pub prefix_length: u8,
    /// A VIP LIF, in no subnet: `prefix_length` is the address's full length.
    pub vip: bool,
    /// The protocol a data LIF serves, where the configuration names it.
    pub protocol: Option<Protocol>,
}

impl Lif {
    fn as_vip(self) -> Self {
        Self {
            prefix_length: full_prefix(self.ip),
            vip: true,
            ..self
        }
    }
}

/// Where a LIF goes in ONTAP and its service policy, as the StorageVirtualMachine's LIF takes
/// them; all absent: ONTAP's choice and the protocol's policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LifPlacement {
    pub home_node: Option<String>,
    pub home_port: Option<String>,
    pub broadcast_domain: Option<String>,
    pub service_policy: Option<String>,
}

fn full_prefix(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

/// A StorageClass the shoot gets.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageClassConfig {
    pub name: String,
    /// LUKS-encrypted volumes (SAN only); the key comes from the Secret `storage-encryption-key`
    /// in the PVC's namespace, as with metal-stack's `ontap-encrypted`.
    #[serde(default)]
    pub encrypted: bool,
    /// The shoot's default StorageClass.
    #[serde(default)]
    pub default: bool,
    #[serde(default)]
    pub reclaim_policy: ReclaimPolicy,
    /// Which protocol's backend it provisions from. Default: the first protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
}

impl StorageClassConfig {
    fn named(name: &str, encrypted: bool) -> Self {
        Self {
            name: name.to_string(),
            encrypted,
            default: false,
            reclaim_policy: ReclaimPolicy::Delete,
            protocol: None,
        }
    }
}

/// Which kind of providerConfig a configuration came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    MetalStack,
    Ontap,
}

/// The providerConfig, resolved: defaults filled in, every value checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtensionConfig {
    pub source: ConfigSource,
    /// The OntapCluster to provision on; `None`: the operator's default.
    pub cluster: Option<String>,
    pub sharing: SvmSharing,
    pub management_lif: Lif,
    pub data_lifs: Vec<Lif>,
    /// Empty: all data aggregates.
    pub aggregates: Vec<String>,
    /// At least one, each once, in the order given.
    pub protocols: Vec<Protocol>,
    /// Each with its protocol resolved.
    pub storage_classes: Vec<StorageClassConfig>,
    /// `None`: the image vector's. Set only where the operator allows shoots to choose images
    /// ([`ConfigDefaults::allow_shoot_images`]).
    pub trident_operator_image: Option<String>,
    pub deletion_policy: DeletionPolicy,
    /// The shoot's account's role (`svm.accountRole`); `None`: the OntapCluster's default.
    pub account_role: Option<AccountRole>,
    /// How often the shoot's account password is rotated (the StorageVirtualMachine's
    /// `spec.account.rotationPeriod`); `None`: the OntapCluster's default, if any.
    pub credential_rotation_period: Option<String>,
    /// The limits of a shoot's own SVM; `None`: the OntapCluster's defaults.
    pub limits: Option<SvmLimitsSpec>,
    /// The management LIF's placement, then each data LIF's; empty when the configuration
    /// places none (metal-stack's never does).
    pub lif_placements: Vec<LifPlacement>,
    /// The SVM's routes; `None`: not managed.
    pub routes: Option<Vec<RouteSpec>>,
}

impl ExtensionConfig {
    /// The LIFs of a TridentConfig, which carries addresses only, in the form metal-stack's
    /// extension gives them on the cluster: VIP LIFs (/32, /128) when it has a BGP peer group
    /// (`bgp`), else the subnet LIFs parsed. Any other configuration states its LIFs itself and
    /// is returned as it is.
    pub fn with_metal_stack_routing(mut self, bgp: bool) -> Self {
        if self.source == ConfigSource::MetalStack && bgp {
            self.management_lif = self.management_lif.as_vip();
            for lif in &mut self.data_lifs {
                *lif = lif.as_vip();
            }
        }
        self
    }

    /// The protocol a StorageClass provisions from.
    pub fn protocol_of(&self, class: &StorageClassConfig) -> Protocol {
        class
            .protocol
            .or_else(|| self.protocols.first().copied())
            .unwrap_or(Protocol::Nvme)
    }
}

/// Settings the operator's flags give and providerConfig cannot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigDefaults {
    /// Prefix length of metal-stack's LIF addresses, which carry none, on a cluster without BGP
    /// peer groups (metal-stack's extension uses /24). With one, its LIFs are /32 (/128) VIP
    /// LIFs instead: [`ExtensionConfig::with_metal_stack_routing`].
    pub metal_stack_prefix_length_v4: u8,
    pub metal_stack_prefix_length_v6: u8,
    /// Whether a providerConfig may name an image the shoot runs (`trident.operatorImage`;
    /// `--extension-allow-shoot-images`). Off by default: every image comes from the image
    /// vector the landscape overwrites, so a shoot owner cannot pull from outside an air-gapped
    /// landscape's mirror, nor run an operator image the landscape did not choose.
    pub allow_shoot_images: bool,
    /// Refuse what metal-stack's lenient decoder ignores: the garden's admission decodes
    /// strictly, as Gardener's validation guidelines ask, so a typo is refused where it is made;
    /// the seed stays lenient, so a shoot that exists keeps working when it never met that check.
    pub strict: bool,
}

impl Default for ConfigDefaults {
    fn default() -> Self {
        Self {
            metal_stack_prefix_length_v4: 24,
            metal_stack_prefix_length_v6: 64,
            allow_shoot_images: false,
            strict: false,
        }
    }
}

mod metal_stack;
mod own;

pub use metal_stack::metal_stack_storage_classes;
use metal_stack::{StrictTridentConfig, TridentConfig, resolve_metal_stack};
use own::{OntapConfig, resolve_ontap};

/// Parses and checks `Extension.spec.providerConfig`, with what the operator allows
/// (`defaults`): the one verdict on a providerConfig, for the seed's controller and for an
/// admission webhook in the garden alike.
pub fn parse_provider_config(
    raw: Option<&Value>,
    defaults: &ConfigDefaults,
) -> Result<ExtensionConfig, ConfigError> {
    let raw = match raw {
        None | Some(Value::Null) => return Err(ConfigError::Missing),
        Some(raw) => raw,
    };
    let text = |key: &str| {
        raw.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    match (text("apiVersion").as_str(), text("kind").as_str()) {
        (METAL_STACK_API_VERSION, METAL_STACK_KIND) if defaults.strict => {
            resolve_metal_stack(decode::<StrictTridentConfig>(raw)?.into(), defaults)
        }
        (METAL_STACK_API_VERSION, METAL_STACK_KIND) => {
            resolve_metal_stack(decode::<TridentConfig>(raw)?, defaults)
        }
        (API_VERSION, KIND) => resolve_ontap(decode::<OntapConfig>(raw)?, defaults),
        _ => Err(ConfigError::UnknownKind {
            api_version: text("apiVersion"),
            kind: text("kind"),
        }),
    }
}

/// Why a providerConfig may not replace `old` for a shoot whose storage exists: the changes
/// that would orphan its SVM or move its storage. The seed would find some of them only after
/// the fact (the SVM object's immutable `clusterRef`), others not at all (a removed data LIF a
/// node still mounts through); the garden refuses them all before anything happens.
pub fn refuse_change(old: &ExtensionConfig, new: &ExtensionConfig) -> Result<(), ConfigError> {
    let field_of = |own: &str, metal: &str| match new.source {
        ConfigSource::Ontap => own.to_string(),
        ConfigSource::MetalStack => metal.to_string(),
    };
    if old.sharing != new.sharing {
        return Err(invalid(
            field_of("svm.sharing", "kind"),
            format!(
                "the SVM is {:?} and cannot become {:?}: that would leave the storage of this shoot on an SVM it no longer uses",
                old.sharing, new.sharing
            ),
        ));
    }
    if old.cluster != new.cluster {
        let name = |c: &Option<String>| c.clone().unwrap_or_else(|| "the default cluster".into());
        return Err(invalid(
            field_of("cluster", "kind"),
            format!(
                "the SVM is on {} and cannot move to {}: ONTAP clusters do not share SVMs",
                name(&old.cluster),
                name(&new.cluster)
            ),
        ));
    }
    if old.management_lif.ip != new.management_lif.ip {
        return Err(invalid(
            field_of("svm.managementLif.ip", "svmIpaddresses.managementLif"),
            format!(
                "the SVM's management LIF is {} and cannot change: Trident's backends reach the SVM there",
                old.management_lif.ip
            ),
        ));
    }
    for lif in &old.data_lifs {
        if !new.data_lifs.iter().any(|n| n.ip == lif.ip) {
            return Err(invalid(
                field_of("svm.dataLifs", "svmIpaddresses.dataLifs"),
                format!(
                    "the data LIF {} cannot be removed or changed: volumes are attached through it (new data LIFs may be added)",
                    lif.ip
                ),
            ));
        }
    }
    Ok(())
}

/// The field of an error about the document as a whole.
const DOCUMENT: &str = "(document)";

/// Decodes with the path of the offending field in the error.
fn decode<T: for<'de> Deserialize<'de>>(raw: &Value) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(raw).map_err(|e| {
        let field = e.path().to_string();
        ConfigError::Malformed {
            // serde_path_to_error says "." for the document itself.
            field: if field == "." { DOCUMENT.into() } else { field },
            message: e.into_inner().to_string(),
        }
    })
}

fn parse_ip(field: &str, text: &str) -> Result<IpAddr, ConfigError> {
    let ip: IpAddr = text
        .parse()
        .map_err(|_| invalid(field, format!("{text:?} is not an IPv4 or IPv6 address")))?;
    let unusable = ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || match ip {
            IpAddr::V4(v4) => v4.is_broadcast() || v4.is_link_local(),
            IpAddr::V6(v6) => v6.is_unicast_link_local(),
        };
    if unusable {
        return Err(invalid(
            field,
            format!("{ip} is not a unicast address a LIF can use"),
        ));
    }
    Ok(ip)
}

/// The checks the StorageVirtualMachine CRD would make later, made here so the shoot owner sees
/// them on the Extension.
fn check_lifs(field: &str, management: &Lif, data: &[Lif]) -> Result<(), ConfigError> {
    if data.len() > MAX_DATA_LIFS {
        return Err(invalid(
            field,
            format!("{} data LIFs; at most {MAX_DATA_LIFS}", data.len()),
        ));
    }
    let mut seen = BTreeSet::from([management.ip]);
    for (i, lif) in data.iter().enumerate() {
        if !seen.insert(lif.ip) {
            return Err(invalid(
                format!("{field}[{i}]"),
                format!(
                    "{} is used twice (each LIF needs an address of its own)",
                    lif.ip
                ),
            ));
        }
    }
    Ok(())
}

fn check_dns_subdomain(field: &str, name: &str) -> Result<(), ConfigError> {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.len() > DNS_SUBDOMAIN_MAX || !name.split('.').all(label_ok) {
        return Err(invalid(field, format!("{name:?} {DNS_SUBDOMAIN_MESSAGE}")));
    }
    Ok(())
}

fn check_storage_classes(
    classes: &[StorageClassConfig],
    protocols: &[Protocol],
) -> Result<(), ConfigError> {
    let mut names = BTreeSet::new();
    for (i, class) in classes.iter().enumerate() {
        let field = format!("storageClasses[{i}]");
        check_dns_subdomain(&format!("{field}.name"), &class.name)?;
        if !names.insert(class.name.as_str()) {
            return Err(invalid(
                format!("{field}.name"),
                format!("{:?} is listed twice", class.name),
            ));
        }
        let protocol = class.protocol.unwrap_or(protocols[0]);
        if !protocols.contains(&protocol) {
            return Err(invalid(
                format!("{field}.protocol"),
                format!("{} is not among svm.protocols", protocol.as_str()),
            ));
        }
        if class.encrypted && !protocol.is_san() {
            return Err(invalid(
                format!("{field}.encrypted"),
                format!(
                    "encryption (LUKS) needs a block protocol (nvme or iscsi), not {}",
                    protocol.as_str()
                ),
            ));
        }
    }
    if classes.iter().filter(|c| c.default).count() > 1 {
        return Err(invalid(
            "storageClasses",
            "at most one StorageClass can be the default",
        ));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::api::rules::ROTATION_PERIOD_MESSAGE;
    use serde_json::json;

    fn parse(v: Value) -> Result<ExtensionConfig, ConfigError> {
        parse_provider_config(Some(&v), &ConfigDefaults::default())
    }

    fn message(v: Value) -> String {
        parse(v).unwrap_err().to_string()
    }

    #[test]
    fn lif_placement_and_routes_travel_and_wrong_combinations_are_refused() {
        let own = |data_lif: Value, routes: Value| {
            json!({
                "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
                "svm": {"managementLif": {"ip": "192.0.2.10", "prefixLength": 24, "servicePolicy": "mgmt-https"},
                        "dataLifs": [data_lif], "routes": routes}
            })
        };
        let config = parse(own(
            json!({"ip": "192.0.2.11", "prefixLength": 24, "homeNode": "node-02", "homePort": "e0d-100"}),
            json!([{"gateway": "192.0.2.1"}, {"destination": "198.51.100.0/24", "gateway": "192.0.2.254"}]),
        ))
        .unwrap();
        assert_eq!(
            config.lif_placements[0].service_policy.as_deref(),
            Some("mgmt-https")
        );
        assert_eq!(
            config.lif_placements[1],
            LifPlacement {
                home_node: Some("node-02".into()),
                home_port: Some("e0d-100".into()),
                ..LifPlacement::default()
            }
        );
        assert_eq!(config.routes.as_ref().map(Vec::len), Some(2));
        for (data_lif, routes, refused) in [
            (
                json!({"ip": "192.0.2.11", "prefixLength": 24, "homePort": "e0d"}),
                json!([]),
                "svm.dataLifs[0].homePort",
            ),
            (
                json!({"ip": "192.0.2.11", "prefixLength": 24, "homeNode": "n", "homePort": "e0d", "broadcastDomain": "b"}),
                json!([]),
                "svm.dataLifs[0].broadcastDomain",
            ),
            (
                json!({"ip": "192.0.2.11", "prefixLength": 24}),
                json!([{"destination": "2001:db8::/32", "gateway": "192.0.2.1"}]),
                "svm.routes[0].destination",
            ),
        ] {
            let message = message(own(data_lif, routes));
            assert!(message.contains(refused), "{refused}: {message}");
        }
        // metal-stack's TridentConfig places nothing and leaves routes alone, as its extension.
        let metal = parse(json!({
            "apiVersion": "ontap.metal.extensions.gardener.cloud/v1alpha1", "kind": "TridentConfig",
            "svmIpaddresses": {"managementLif": "10.130.0.10", "dataLifs": ["10.130.0.11"]}
        }))
        .unwrap();
        assert!(metal.lif_placements.is_empty() && metal.routes.is_none());
    }

    #[test]
    fn metal_stack_manifest_is_accepted_unchanged() {
        // As in a shoot manifest written for metal-stack's extension, with a field of an older
        // release that metal-stack's lenient decoder ignores too.
        let config = parse(json!({
            "apiVersion": "ontap.metal.extensions.gardener.cloud/v1alpha1",
            "kind": "TridentConfig",
            "svmIpaddresses": {"managementLif": "10.130.0.10", "dataLifs": ["10.130.0.11", "10.130.0.12"]},
            "protocols": ["nvme"]
        }))
        .unwrap();
        assert_eq!(config.source, ConfigSource::MetalStack);
        assert_eq!(config.sharing, SvmSharing::PerProject);
        assert_eq!(config.protocols, vec![Protocol::Nvme]);
        assert_eq!(config.management_lif.ip.to_string(), "10.130.0.10");
        assert_eq!(config.management_lif.prefix_length, 24);
        assert_eq!(config.data_lifs.len(), 2);
        let names: Vec<_> = config
            .storage_classes
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(names, ["ontap-gold", "ontap-encrypted"]);
        assert!(config.storage_classes[1].encrypted);
        assert_eq!(config.deletion_policy, DeletionPolicy::Retain);
        assert_eq!(
            config.account_role, None,
            "metal-stack's vsadmin, unless the cluster says"
        );
    }

    #[test]
    fn metal_stack_lifs_are_vips_on_a_cluster_with_bgp() {
        let metal_stack = parse(json!({
            "apiVersion": METAL_STACK_API_VERSION, "kind": METAL_STACK_KIND,
            "svmIpaddresses": {"managementLif": "10.130.0.10", "dataLifs": ["10.130.0.11", "2001:db8::11"]}
        }))
        .unwrap();
        let form = |c: &ExtensionConfig| {
            std::iter::once(&c.management_lif)
                .chain(&c.data_lifs)
                .map(|l| (l.prefix_length, l.vip))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            form(&metal_stack.clone().with_metal_stack_routing(false)),
            [(24, false), (24, false), (64, false)]
        );
        assert_eq!(
            form(&metal_stack.with_metal_stack_routing(true)),
            [(32, true), (32, true), (128, true)]
        );
        // Our own configuration says what it wants, BGP or not.
        let own = parse(ontap(json!({
            "managementLif": {"ip": "192.0.2.10", "prefixLength": 24},
            "dataLifs": [{"ip": "192.0.2.11", "prefixLength": 32, "vip": true}]
        })))
        .unwrap();
        assert_eq!(
            form(&own.with_metal_stack_routing(true)),
            [(24, false), (32, true)]
        );
        assert_eq!(
            message(ontap(json!({
                "managementLif": {"ip": "192.0.2.10", "prefixLength": 24},
                "dataLifs": [{"ip": "192.0.2.11", "prefixLength": 24, "vip": true}]
            }))),
            "providerConfig.svm.dataLifs[0].prefixLength: must be 32 for the VIP LIF 192.0.2.11: a VIP LIF is in no subnet"
        );
    }

    #[test]
    fn metal_stack_older_data_lif_spelling_is_accepted() {
        let config = parse(json!({
            "apiVersion": METAL_STACK_API_VERSION, "kind": METAL_STACK_KIND,
            "svmIpaddresses": {"managementLif": "2001:db8::10", "dataLif": "2001:db8::11"}
        }))
        .unwrap();
        assert_eq!(config.data_lifs.len(), 1);
        assert_eq!(config.data_lifs[0].prefix_length, 64);
    }

    #[test]
    fn metal_stack_errors_name_the_field() {
        let base = |addresses: Value| json!({"apiVersion": METAL_STACK_API_VERSION, "kind": METAL_STACK_KIND, "svmIpaddresses": addresses});
        assert_eq!(
            message(base(json!({"dataLifs": ["10.0.0.2"]}))),
            "providerConfig.svmIpaddresses.managementLif: the SVM's management LIF address is required"
        );
        assert_eq!(
            message(base(json!({"managementLif": "10.0.0.1"}))),
            "providerConfig.svmIpaddresses.dataLifs: at least one data LIF address is required"
        );
        assert_eq!(
            message(base(
                json!({"managementLif": "10.0.0.1", "dataLifs": ["10.0.0.2", "10.0.0.256"]})
            )),
            "providerConfig.svmIpaddresses.dataLifs[1]: \"10.0.0.256\" is not an IPv4 or IPv6 address"
        );
        assert_eq!(
            message(base(
                json!({"managementLif": "10.0.0.1", "dataLifs": ["10.0.0.1"]})
            )),
            "providerConfig.svmIpaddresses.dataLifs[0]: 10.0.0.1 is used twice (each LIF needs an address of its own)"
        );
        assert_eq!(
            message(base(json!({"managementLif": 7}))),
            "providerConfig.svmIpaddresses.managementLif: invalid type: integer `7`, expected a string"
        );
    }

    fn ontap(svm: Value) -> Value {
        json!({"apiVersion": API_VERSION, "kind": KIND, "svm": svm})
    }

    fn minimal_svm() -> Value {
        json!({"managementLif": {"ip": "192.0.2.10", "prefixLength": 24},
               "dataLifs": [{"ip": "192.0.2.11", "prefixLength": 24}]})
    }

    #[test]
    fn own_config_defaults() {
        let config = parse(ontap(minimal_svm())).unwrap();
        assert_eq!(config.source, ConfigSource::Ontap);
        assert_eq!(config.sharing, SvmSharing::PerShoot);
        assert_eq!(config.protocols, vec![Protocol::Nvme]);
        assert_eq!(config.storage_classes, metal_stack_storage_classes());
        assert_eq!(config.deletion_policy, DeletionPolicy::Delete);
        assert_eq!(config.cluster, None);
        assert_eq!(
            config.account_role, None,
            "the OntapCluster's default decides"
        );
        assert_eq!(config.credential_rotation_period, None);
    }

    #[test]
    fn a_rotation_period_is_carried_and_checked_as_the_svm_checks_it() {
        let with = |period: &str| {
            let mut svm = minimal_svm();
            svm["credentialRotationPeriod"] = json!(period);
            ontap(svm)
        };
        let config = parse(with("720h")).unwrap();
        assert_eq!(config.credential_rotation_period.as_deref(), Some("720h"));
        assert_eq!(
            message(with("30s")),
            format!("providerConfig.svm.credentialRotationPeriod: {ROTATION_PERIOD_MESSAGE}")
        );
    }

    #[test]
    fn own_config_limits_travel_to_the_shoots_own_svm_only() {
        let mut svm = minimal_svm();
        svm["limits"] = json!({"maxVolumes": 40, "storageLimit": "200Gi", "storageLimitThresholdAlert": 80, "maxThroughputIops": 5000});
        let config = parse(ontap(svm.clone())).unwrap();
        let limits = config.limits.unwrap();
        assert_eq!(limits.max_volumes, Some(40));
        assert_eq!(limits.storage_limit.as_deref(), Some("200Gi"));
        assert_eq!(limits.storage_limit_threshold_alert, Some(80));
        assert_eq!(limits.max_throughput_iops, Some(5000));
        let mut bad = svm.clone();
        bad["limits"]["storageLimit"] = json!("1.5");
        assert!(
            message(ontap(bad)).contains("svm.limits.storageLimit"),
            "a fraction of a byte"
        );
        svm["sharing"] = json!("PerProject");
        assert!(message(ontap(svm)).contains("svm.limits"), "a shared SVM's");
    }

    #[test]
    fn own_config_in_full() {
        let config = parse(json!({
            "apiVersion": API_VERSION, "kind": KIND, "cluster": "lab",
            "svm": {"sharing": "PerProject",
                "managementLif": {"ip": "192.0.2.10", "prefixLength": 24},
                "dataLifs": [{"ip": "192.0.2.11", "prefixLength": 24, "protocols": ["nfs"]},
                             {"ip": "192.0.2.12", "prefixLength": 24, "protocols": ["nvme"]}],
                "aggregates": ["aggr1", "aggr_2"], "protocols": ["nfs", "nvme"], "deletionPolicy": "Retain",
                "accountRole": "Trident"},
            "storageClasses": [
                {"name": "files", "default": true, "reclaimPolicy": "Retain"},
                {"name": "blocks", "protocol": "nvme", "encrypted": true}]
        }))
        .unwrap();
        assert_eq!(config.cluster.as_deref(), Some("lab"));
        assert_eq!(config.protocols, vec![Protocol::Nfs, Protocol::Nvme]);
        let served: Vec<_> = config.data_lifs.iter().map(|l| l.protocol).collect();
        assert_eq!(served, [Some(Protocol::Nfs), Some(Protocol::Nvme)]);
        assert_eq!(
            config.protocol_of(&config.storage_classes[0]),
            Protocol::Nfs
        );
        assert_eq!(
            config.protocol_of(&config.storage_classes[1]),
            Protocol::Nvme
        );
        assert_eq!(
            config.storage_classes[0].reclaim_policy,
            ReclaimPolicy::Retain
        );
        assert_eq!(config.deletion_policy, DeletionPolicy::Retain);
        assert_eq!(config.trident_operator_image, None);
        assert_eq!(config.account_role, Some(AccountRole::Trident));
    }

    #[test]
    fn a_shoot_image_needs_the_operator_s_permission() {
        let with_image = |image: &str| {
            let mut raw = ontap(minimal_svm());
            raw["trident"] = json!({"operatorImage": image});
            raw
        };
        let image = "registry.example/trident-operator:25.06.3";
        let refused = parse(with_image(image)).unwrap_err();
        assert!(
            matches!(&refused, ConfigError::Invalid { field, .. } if field == "trident.operatorImage")
        );
        assert!(
            refused
                .to_string()
                .starts_with("providerConfig.trident.operatorImage: this landscape does not let a shoot choose its images"),
            "{refused}"
        );
        let allowed = ConfigDefaults {
            allow_shoot_images: true,
            ..ConfigDefaults::default()
        };
        let config = parse_provider_config(Some(&with_image(image)), &allowed).unwrap();
        assert_eq!(config.trident_operator_image.as_deref(), Some(image));
        assert_eq!(
            parse_provider_config(Some(&with_image("a b")), &allowed)
                .unwrap_err()
                .to_string(),
            "providerConfig.trident.operatorImage: \"a b\" is not an image reference"
        );
        // Without the field, nothing needs allowing.
        assert_eq!(
            parse(ontap(minimal_svm())).unwrap().trident_operator_image,
            None
        );
    }

    #[test]
    fn nfs_only_gets_a_nas_class() {
        let mut svm = minimal_svm();
        svm["protocols"] = json!(["nfs"]);
        let config = parse(ontap(svm)).unwrap();
        assert_eq!(config.storage_classes[0].name, "ontap-nas");
    }

    #[test]
    fn own_config_errors_name_the_field() {
        let cases = [
            (
                json!({"apiVersion": API_VERSION, "kind": KIND, "svm": minimal_svm(), "storageclasses": []}),
                "providerConfig.storageclasses: unknown field `storageclasses`, expected one of",
            ),
            (
                ontap(
                    json!({"managementLif": {"ip": "192.0.2.10", "prefixLength": 24}, "dataLifs": [{"ip": "192.0.2.11"}]}),
                ),
                "providerConfig.svm.dataLifs[0]: missing field `prefixLength`",
            ),
            (
                ontap(
                    json!({"managementLif": {"ip": "192.0.2.10", "prefixLength": 33}, "dataLifs": [{"ip": "192.0.2.11", "prefixLength": 24}]}),
                ),
                "providerConfig.svm.managementLif.prefixLength: must be 1 to 32 for 192.0.2.10",
            ),
            (
                ontap(
                    json!({"managementLif": {"ip": "127.0.0.1", "prefixLength": 8}, "dataLifs": [{"ip": "192.0.2.11", "prefixLength": 24}]}),
                ),
                "providerConfig.svm.managementLif.ip: 127.0.0.1 is not a unicast address a LIF can use",
            ),
            (
                ontap(
                    json!({"managementLif": {"ip": "192.0.2.10", "prefixLength": 24}, "dataLifs": []}),
                ),
                "providerConfig.svm.dataLifs: at least one data LIF is required",
            ),
            (
                ontap(
                    json!({"managementLif": {"ip": "192.0.2.10", "prefixLength": 24}, "dataLifs": [{"ip": "192.0.2.11", "prefixLength": 24}], "protocols": ["smb"]}),
                ),
                "providerConfig.svm.protocols[0]: unknown variant `smb`, expected one of `nvme`, `iscsi`, `nfs`",
            ),
            (
                ontap(
                    json!({"managementLif": {"ip": "192.0.2.10", "prefixLength": 24}, "dataLifs": [{"ip": "192.0.2.11", "prefixLength": 24}], "aggregates": ["aggr-1"]}),
                ),
                "providerConfig.svm.aggregates[0]: \"aggr-1\": aggregate names start with a letter or '_' and contain only letters, digits and '_'",
            ),
            (
                ontap(
                    json!({"managementLif": {"ip": "192.0.2.10", "prefixLength": 24}, "dataLifs": [{"ip": "192.0.2.11", "prefixLength": 24}], "sharing": "PerTenant"}),
                ),
                "providerConfig.svm.sharing: unknown variant `PerTenant`, expected `PerShoot` or `PerProject`",
            ),
        ];
        for (input, expected) in cases {
            let got = message(input);
            assert!(
                got.starts_with(expected),
                "{got:?} does not start with {expected:?}"
            );
        }
    }

    #[test]
    fn data_lif_protocols_are_refused_as_the_svm_would_refuse_them() {
        let with = |protocols: Value, lifs: Value| {
            let mut svm = minimal_svm();
            svm["protocols"] = protocols;
            svm["dataLifs"] = lifs;
            message(ontap(svm))
        };
        let lif = |last: u8, protocols: Value| {
            let mut lif = json!({"ip": format!("192.0.2.{last}"), "prefixLength": 24});
            if !protocols.is_null() {
                lif["protocols"] = protocols;
            }
            lif
        };
        let three = json!(["nvme", "iscsi", "nfs"]);
        assert_eq!(
            with(three.clone(), json!([lif(11, Value::Null)])),
            "providerConfig.svm.dataLifs[0].protocols: required when the SVM enables more than one protocol: name the one this data LIF serves"
        );
        assert_eq!(
            with(
                three.clone(),
                json!([lif(11, json!(["nvme"])), lif(12, json!(["nfs"]))])
            ),
            "providerConfig.svm.dataLifs: iscsi, which the SVM enables, is served by no data LIF"
        );
        assert_eq!(
            with(three, json!([lif(11, json!(["nvme", "iscsi"]))])),
            "providerConfig.svm.dataLifs[0].protocols: a data LIF serves exactly one protocol with ONTAP's default service policies, not 2"
        );
        assert_eq!(
            with(json!(["nvme"]), json!([lif(11, json!(["nfs"]))])),
            "providerConfig.svm.dataLifs[0].protocols: nfs is not among the protocols the SVM enables"
        );
        let mut svm = minimal_svm();
        svm["managementLif"]["protocols"] = json!(["nvme"]);
        assert_eq!(
            message(ontap(svm)),
            "providerConfig.svm.managementLif.protocols: the management LIF serves no data protocol: its service policy is default-management"
        );
        // One protocol: naming it is allowed, not needed.
        let one = parse(ontap(json!({
            "managementLif": {"ip": "192.0.2.10", "prefixLength": 24},
            "dataLifs": [lif(11, Value::Null), lif(12, json!(["nvme"]))]
        })))
        .unwrap();
        let served: Vec<_> = one.data_lifs.iter().map(|l| l.protocol).collect();
        assert_eq!(served, [None, Some(Protocol::Nvme)]);
    }

    #[test]
    fn storage_class_errors_name_the_field() {
        let with = |classes: Value, protocols: Value| {
            let mut svm = minimal_svm();
            svm["protocols"] = protocols;
            json!({"apiVersion": API_VERSION, "kind": KIND, "svm": svm, "storageClasses": classes})
        };
        assert_eq!(
            message(with(json!([{"name": "Gold"}]), json!(["nvme"]))),
            "providerConfig.storageClasses[0].name: \"Gold\" must be a lowercase RFC 1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
        );
        assert_eq!(
            message(with(json!([{"name": "a"}, {"name": "a"}]), json!(["nvme"]))),
            "providerConfig.storageClasses[1].name: \"a\" is listed twice"
        );
        assert_eq!(
            message(with(
                json!([{"name": "a", "protocol": "nfs"}]),
                json!(["nvme"])
            )),
            "providerConfig.storageClasses[0].protocol: nfs is not among svm.protocols"
        );
        assert_eq!(
            message(with(
                json!([{"name": "a", "encrypted": true}]),
                json!(["nfs"])
            )),
            "providerConfig.storageClasses[0].encrypted: encryption (LUKS) needs a block protocol (nvme or iscsi), not nfs"
        );
        assert_eq!(
            message(with(
                json!([{"name": "a", "default": true}, {"name": "b", "default": true}]),
                json!(["nvme"])
            )),
            "providerConfig.storageClasses: at most one StorageClass can be the default"
        );
    }

    #[test]
    fn missing_or_foreign_config() {
        assert_eq!(
            parse_provider_config(None, &ConfigDefaults::default()),
            Err(ConfigError::Missing)
        );
        assert_eq!(
            message(json!({"apiVersion": "v1", "kind": "ConfigMap"})),
            "providerConfig has apiVersion \"v1\" and kind \"ConfigMap\"; expected OntapConfig (ontap.extensions.storage.dev/v1alpha1) or TridentConfig (ontap.metal.extensions.gardener.cloud/v1alpha1)"
        );
    }
}
