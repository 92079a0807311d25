//! This project's `OntapConfig`: every field checked, unknown fields refused.

use std::collections::BTreeSet;
use std::net::IpAddr;

use serde::Deserialize;

use crate::api::rules::{
    AGGREGATE_NAMES_MESSAGE, MANAGEMENT_LIF_PROTOCOLS_MESSAGE, ONTAP_NAME_MESSAGE,
    ROTATION_PERIOD_MESSAGE, is_ontap_name, lif_placement, lif_protocols, quantity_bytes,
    rotation_period,
};
use crate::api::{AccountRole, DeletionPolicy, Protocol, RouteSpec, SvmLimitsSpec};

use super::metal_stack::metal_stack_storage_classes;
use super::{
    ConfigDefaults, ConfigError, ConfigSource, ExtensionConfig, Lif, LifPlacement,
    StorageClassConfig, SvmSharing, check_dns_subdomain, check_lifs, check_storage_classes,
    full_prefix, invalid, parse_ip,
};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct OntapConfig {
    #[allow(dead_code)]
    api_version: String,
    #[allow(dead_code)]
    kind: String,
    #[serde(default)]
    cluster: Option<String>,
    svm: SvmConfig,
    #[serde(default)]
    storage_classes: Option<Vec<StorageClassConfig>>,
    #[serde(default)]
    trident: TridentSettings,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct SvmConfig {
    #[serde(default)]
    sharing: SvmSharing,
    management_lif: LifConfig,
    data_lifs: Vec<LifConfig>,
    #[serde(default)]
    aggregates: Vec<String>,
    #[serde(default)]
    protocols: Vec<Protocol>,
    #[serde(default)]
    deletion_policy: DeletionPolicy,
    /// The shoot's account's role; absent: the OntapCluster's default, else `Vsadmin`.
    #[serde(default)]
    account_role: Option<AccountRole>,
    /// How often the account's password is rotated, as the StorageVirtualMachine's
    /// `spec.account.rotationPeriod`.
    #[serde(default)]
    credential_rotation_period: Option<String>,
    /// The limits of the shoot's own SVM, as a StorageVirtualMachine's `limits`.
    #[serde(default)]
    limits: Option<SvmLimitsSpec>,
    /// The SVM's static routes, as the StorageVirtualMachine's `routes`.
    #[serde(default)]
    routes: Option<Vec<RouteSpec>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct LifConfig {
    ip: String,
    prefix_length: u8,
    #[serde(default)]
    vip: bool,
    /// Data LIFs only: the protocol the LIF serves, as in the StorageVirtualMachine's LIFs.
    #[serde(default)]
    protocols: Option<Vec<Protocol>>,
    /// Placement and service policy, as the StorageVirtualMachine's LIFs take them.
    #[serde(default)]
    home_node: Option<String>,
    #[serde(default)]
    home_port: Option<String>,
    #[serde(default)]
    broadcast_domain: Option<String>,
    #[serde(default)]
    service_policy: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct TridentSettings {
    #[serde(default)]
    operator_image: Option<String>,
}

pub(super) fn resolve_ontap(
    config: OntapConfig,
    defaults: &ConfigDefaults,
) -> Result<ExtensionConfig, ConfigError> {
    let svm = config.svm;
    let management_lif = resolve_lif("svm.managementLif", &svm.management_lif)?;
    if svm.management_lif.protocols.is_some() {
        return Err(invalid(
            "svm.managementLif.protocols",
            MANAGEMENT_LIF_PROTOCOLS_MESSAGE,
        ));
    }
    if svm.data_lifs.is_empty() {
        return Err(invalid("svm.dataLifs", "at least one data LIF is required"));
    }
    let mut data_lifs = svm
        .data_lifs
        .iter()
        .enumerate()
        .map(|(i, l)| resolve_lif(&format!("svm.dataLifs[{i}]"), l))
        .collect::<Result<Vec<_>, _>>()?;
    check_lifs("svm.dataLifs", &management_lif, &data_lifs)?;
    check_aggregates(&svm.aggregates)?;
    let protocols = resolve_protocols(&svm.protocols)?;
    // Refused here as the StorageVirtualMachine would refuse it, so that no backend is
    // delivered whose protocol no LIF serves: Trident's driver finds no LIF and fails.
    let named: Vec<_> = svm
        .data_lifs
        .iter()
        .map(|l| l.protocols.as_deref())
        .collect();
    lif_protocols(&protocols, &named).map_err(|e| {
        let field = match e.lif() {
            Some(i) => format!("svm.dataLifs[{i}].protocols"),
            None => "svm.dataLifs".into(),
        };
        invalid(field, e.to_string())
    })?;
    for (lif, names) in data_lifs.iter_mut().zip(&named) {
        lif.protocol = names.and_then(|n| n.first().copied());
    }
    let storage_classes = match config.storage_classes {
        Some(classes) => classes,
        None if protocols[0].is_san() => metal_stack_storage_classes(),
        None => vec![StorageClassConfig::named("ontap-nas", false)],
    };
    check_storage_classes(&storage_classes, &protocols)?;
    if let Some(cluster) = &config.cluster {
        check_dns_subdomain("cluster", cluster)?;
    }
    if let Some(period) = &svm.credential_rotation_period
        && rotation_period(period).is_none()
    {
        return Err(invalid(
            "svm.credentialRotationPeriod",
            ROTATION_PERIOD_MESSAGE,
        ));
    }
    if let Some(image) = &config.trident.operator_image {
        check_shoot_image("trident.operatorImage", image, defaults)?;
    }
    if let Some(limits) = &svm.limits {
        check_limits(svm.sharing, limits)?;
    }
    let lifs = std::iter::once(("svm.managementLif".to_string(), &svm.management_lif)).chain(
        svm.data_lifs
            .iter()
            .enumerate()
            .map(|(i, l)| (format!("svm.dataLifs[{i}]"), l)),
    );
    let lif_placements = lifs
        .map(|(field, l)| resolve_placement(&field, l))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(routes) = &svm.routes {
        check_routes(routes)?;
    }
    Ok(ExtensionConfig {
        source: ConfigSource::Ontap,
        cluster: config.cluster,
        sharing: svm.sharing,
        management_lif,
        data_lifs,
        aggregates: svm.aggregates,
        protocols,
        storage_classes,
        trident_operator_image: config.trident.operator_image,
        deletion_policy: svm.deletion_policy,
        account_role: svm.account_role,
        credential_rotation_period: svm.credential_rotation_period,
        limits: svm.limits,
        lif_placements,
        routes: svm.routes,
    })
}

/// Limits as the StorageVirtualMachine admits them, on a shoot's own SVM only: a shoot sharing
/// its project's SVM changes nothing of it.
fn check_limits(sharing: SvmSharing, limits: &SvmLimitsSpec) -> Result<(), ConfigError> {
    if sharing == SvmSharing::PerProject {
        return Err(invalid(
            "svm.limits",
            "a shoot sharing its project's SVM sets no limits on it; they come from the OntapCluster's defaults",
        ));
    }
    if let Some(limit) = &limits.storage_limit
        && quantity_bytes(limit).is_none()
    {
        return Err(invalid(
            "svm.limits.storageLimit",
            format!("{limit:?} is not a whole number of bytes as a quantity, e.g. 500Gi or 2T"),
        ));
    }
    if limits
        .storage_limit_threshold_alert
        .is_some_and(|p| p > 100)
    {
        return Err(invalid(
            "svm.limits.storageLimitThresholdAlert",
            "a percentage: 0 to 100",
        ));
    }
    Ok(())
}

/// A LIF's placement: names as ONTAP takes them, combined as its interface schema allows.
fn resolve_placement(field: &str, l: &LifConfig) -> Result<LifPlacement, ConfigError> {
    for (part, name) in [
        ("homeNode", &l.home_node),
        ("homePort", &l.home_port),
        ("broadcastDomain", &l.broadcast_domain),
        ("servicePolicy", &l.service_policy),
    ] {
        if let Some(name) = name
            && !is_ontap_name(name)
        {
            return Err(invalid(format!("{field}.{part}"), ONTAP_NAME_MESSAGE));
        }
    }
    lif_placement(
        l.home_node.is_some(),
        l.home_port.is_some(),
        l.broadcast_domain.is_some(),
        l.vip,
    )
    .map_err(|(part, problem)| invalid(format!("{field}.{part}"), problem))?;
    Ok(LifPlacement {
        home_node: l.home_node.clone(),
        home_port: l.home_port.clone(),
        broadcast_domain: l.broadcast_domain.clone(),
        service_policy: l.service_policy.clone(),
    })
}

/// Routes as the StorageVirtualMachine's admission takes them: a unicast gateway, and a
/// destination of its family in CIDR notation.
fn check_routes(routes: &[RouteSpec]) -> Result<(), ConfigError> {
    for (i, route) in routes.iter().enumerate() {
        let gateway = parse_ip(&format!("svm.routes[{i}].gateway"), &route.gateway)?;
        if let Some(destination) = &route.destination {
            let field = format!("svm.routes[{i}].destination");
            let (address, prefix) = destination
                .split_once('/')
                .ok_or_else(|| invalid(&field, "must be a network in CIDR notation"))?;
            let address: IpAddr = address
                .parse()
                .map_err(|_| invalid(&field, "must be a network in CIDR notation"))?;
            let prefix: u8 = prefix
                .parse()
                .map_err(|_| invalid(&field, "must be a network in CIDR notation"))?;
            if prefix > full_prefix(address) || address.is_ipv4() != gateway.is_ipv4() {
                return Err(invalid(
                    &field,
                    "must be a network of the gateway's family in CIDR notation",
                ));
            }
        }
    }
    Ok(())
}

/// An image the shoot owner names: refused unless the operator allows shoots to choose images.
pub(super) fn check_shoot_image(
    field: &str,
    image: &str,
    defaults: &ConfigDefaults,
) -> Result<(), ConfigError> {
    if !defaults.allow_shoot_images {
        return Err(invalid(
            field,
            "this landscape does not let a shoot choose its images: they come from the \
             extension's image vector; remove the field",
        ));
    }
    if image.is_empty() || image.chars().any(char::is_whitespace) {
        return Err(invalid(
            field,
            format!("{image:?} is not an image reference"),
        ));
    }
    Ok(())
}

/// A LIF of the providerConfig: an address, a prefix length that fits it, and /32 or /128 for
/// a VIP LIF, which is in no subnet.
pub(super) fn resolve_lif(field: &str, l: &LifConfig) -> Result<Lif, ConfigError> {
    let ip = parse_ip(&format!("{field}.ip"), &l.ip)?;
    let max = full_prefix(ip);
    if !(1..=max).contains(&l.prefix_length) {
        return Err(invalid(
            format!("{field}.prefixLength"),
            format!("must be 1 to {max} for {ip}"),
        ));
    }
    if l.vip && l.prefix_length != max {
        return Err(invalid(
            format!("{field}.prefixLength"),
            format!("must be {max} for the VIP LIF {ip}: a VIP LIF is in no subnet"),
        ));
    }
    Ok(Lif {
        ip,
        prefix_length: l.prefix_length,
        vip: l.vip,
        protocol: None,
    })
}

/// Aggregate names as ONTAP takes them, each listed once.
pub(super) fn check_aggregates(aggregates: &[String]) -> Result<(), ConfigError> {
    let mut seen = BTreeSet::new();
    for (i, aggregate) in aggregates.iter().enumerate() {
        let field = format!("svm.aggregates[{i}]");
        let valid = aggregate
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && aggregate.len() <= 255
            && aggregate
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(invalid(
                field,
                format!("{aggregate:?}: {AGGREGATE_NAMES_MESSAGE}"),
            ));
        }
        if !seen.insert(aggregate.as_str()) {
            return Err(invalid(field, format!("{aggregate:?} is listed twice")));
        }
    }
    Ok(())
}

/// The protocols asked for, NVMe when none is, each listed once.
pub(super) fn resolve_protocols(asked: &[Protocol]) -> Result<Vec<Protocol>, ConfigError> {
    let protocols = if asked.is_empty() {
        vec![Protocol::Nvme]
    } else {
        asked.to_vec()
    };
    let mut seen = BTreeSet::new();
    for (i, p) in protocols.iter().enumerate() {
        if !seen.insert(*p) {
            return Err(invalid(
                format!("svm.protocols[{i}]"),
                format!("{} is listed twice", p.as_str()),
            ));
        }
    }
    Ok(protocols)
}
