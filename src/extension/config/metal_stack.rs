//! metal-stack's `TridentConfig`, taken as metal-stack's extension takes it.

use std::net::IpAddr;

use serde::{Deserialize, Deserializer};

use crate::api::{DeletionPolicy, Protocol};

use super::{
    ConfigDefaults, ConfigError, ConfigSource, ExtensionConfig, Lif, StorageClassConfig,
    SvmSharing, check_lifs, invalid, parse_ip,
};

/// metal-stack's `TridentConfig`. Decoded leniently, as metal-stack's extension decodes it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TridentConfig {
    #[serde(default)]
    svm_ipaddresses: SvmIpAddresses,
}

/// The same document decoded strictly, for the garden ([`ConfigDefaults::strict`]): a field no
/// release of metal-stack's `TridentConfig` ever had is a typo there, refused before the shoot
/// exists. The fields of its first release, which its extension no longer reads and neither
/// does this one, are still accepted, so a manifest metal-stack accepts today is not refused.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct StrictTridentConfig {
    #[allow(dead_code)]
    api_version: String,
    #[allow(dead_code)]
    kind: String,
    #[serde(default)]
    svm_ipaddresses: StrictSvmIpAddresses,
    #[serde(default, rename = "svmName")]
    _svm_name: Option<serde::de::IgnoredAny>,
    #[serde(default, rename = "protocols")]
    _protocols: Option<serde::de::IgnoredAny>,
    #[serde(default, rename = "svmSecretRef")]
    _svm_secret_ref: Option<serde::de::IgnoredAny>,
    #[serde(default, rename = "managementLif")]
    _management_lif: Option<serde::de::IgnoredAny>,
    #[serde(default, rename = "dataLif")]
    _data_lif: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct StrictSvmIpAddresses {
    #[serde(default)]
    management_lif: String,
    #[serde(default, alias = "dataLif", deserialize_with = "one_or_many")]
    data_lifs: Vec<String>,
}

impl From<StrictTridentConfig> for TridentConfig {
    fn from(strict: StrictTridentConfig) -> Self {
        Self {
            svm_ipaddresses: SvmIpAddresses {
                management_lif: strict.svm_ipaddresses.management_lif,
                data_lifs: strict.svm_ipaddresses.data_lifs,
            },
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SvmIpAddresses {
    #[serde(default)]
    management_lif: String,
    /// Earlier releases of metal-stack's extension called it `dataLif`, as one address or a list.
    #[serde(default, alias = "dataLif", deserialize_with = "one_or_many")]
    data_lifs: Vec<String>,
}

pub(super) fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

pub(super) fn resolve_metal_stack(
    config: TridentConfig,
    defaults: &ConfigDefaults,
) -> Result<ExtensionConfig, ConfigError> {
    let addresses = config.svm_ipaddresses;
    let with_prefix = |ip: IpAddr| Lif {
        ip,
        prefix_length: if ip.is_ipv4() {
            defaults.metal_stack_prefix_length_v4
        } else {
            defaults.metal_stack_prefix_length_v6
        },
        vip: false,
        protocol: None,
    };
    if addresses.management_lif.is_empty() {
        return Err(invalid(
            "svmIpaddresses.managementLif",
            "the SVM's management LIF address is required",
        ));
    }
    let management_lif = with_prefix(parse_ip(
        "svmIpaddresses.managementLif",
        &addresses.management_lif,
    )?);
    if addresses.data_lifs.is_empty() {
        return Err(invalid(
            "svmIpaddresses.dataLifs",
            "at least one data LIF address is required",
        ));
    }
    let data_lifs = addresses
        .data_lifs
        .iter()
        .enumerate()
        .map(|(i, ip)| {
            Ok(with_prefix(parse_ip(
                &format!("svmIpaddresses.dataLifs[{i}]"),
                ip,
            )?))
        })
        .collect::<Result<Vec<_>, ConfigError>>()?;
    check_lifs("svmIpaddresses.dataLifs", &management_lif, &data_lifs)?;
    Ok(ExtensionConfig {
        source: ConfigSource::MetalStack,
        cluster: None,
        sharing: SvmSharing::PerProject,
        management_lif,
        data_lifs,
        aggregates: Vec::new(),
        protocols: vec![Protocol::Nvme],
        storage_classes: metal_stack_storage_classes(),
        trident_operator_image: None,
        deletion_policy: DeletionPolicy::Retain,
        // metal-stack's extension gives the shoot's account vsadmin: so does its TridentConfig
        // here, unless the OntapCluster's default says otherwise.
        account_role: None,
        // metal-stack's extension never rotates: the OntapCluster's default decides.
        credential_rotation_period: None,
        limits: None,
        lif_placements: Vec::new(),
        routes: None,
    })
}

/// metal-stack's two classes: plain and LUKS-encrypted, on the NVMe backend, neither the default.
pub fn metal_stack_storage_classes() -> Vec<StorageClassConfig> {
    vec![
        StorageClassConfig::named("ontap-gold", false),
        StorageClassConfig::named("ontap-encrypted", true),
    ]
}
