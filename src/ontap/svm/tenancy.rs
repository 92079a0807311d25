//! Which namespaces may use an OntapCluster, and which StorageVirtualMachine holds an SVM name
//! or a LIF address when two ask for the same one. Decided from the objects alone, before any
//! request reaches ONTAP: one tenant must not take a name or an address another tenant's object
//! asked for first, nor use a cluster its namespace was not granted.

use k8s_openapi::jiff::Timestamp;
use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;
use kube::core::{Selector, SelectorExt};

use super::netmask::cidr_contains;
use super::plan::beyond_bounds;
use crate::api::{
    ClusterAllowances, DeletionPolicy, LifSpec, StorageVirtualMachine, StorageVirtualMachineSpec,
    SvmMode,
};

/// Whether a namespace with `labels` may use a cluster with `selector` (none: every namespace).
pub fn namespace_allowed(
    selector: Option<&LabelSelector>,
    labels: &BTreeMap<String, String>,
) -> Result<bool, String> {
    let Some(selector) = selector else {
        return Ok(true);
    };
    let selector = Selector::try_from(selector.clone())
        .map_err(|e| format!("the OntapCluster's namespaceSelector is invalid: {e}"))?;
    Ok(selector.matches(labels))
}

/// Whether `provider`, the object that provisions an SVM, lets `AccountOnly` objects of
/// `namespace` (with `labels`) make accounts on it: its own namespace always, others only
/// through its `shareWith`.
pub fn shares_with(
    provider: &StorageVirtualMachine,
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> Result<bool, String> {
    if provider.namespace().as_deref() == Some(namespace) {
        return Ok(true);
    }
    match &provider.spec.share_with {
        None => Ok(false),
        Some(selector) => namespace_allowed(Some(selector), labels),
    }
}

/// The first of `svm`'s choices its cluster's administrator does not allow, as the message of a
/// condition naming the field; `tenant`: the object is a tenant's (`tenantRetain` bounds only
/// those). An `AccountOnly` object chooses nothing ONTAP is asked for but its account.
pub fn not_allowed(
    svm: &StorageVirtualMachine,
    allowed: &ClusterAllowances,
    cluster: &str,
    tenant: bool,
) -> Option<String> {
    let spec = &svm.spec;
    if tenant
        && allowed.tenant_retain == Some(false)
        && spec.deletion_policy == DeletionPolicy::Retain
    {
        return Some(format!(
            "spec.deletionPolicy: the OntapCluster {cluster} does not let tenants retain SVMs; use Delete"
        ));
    }
    if spec.mode == SvmMode::AccountOnly {
        return None;
    }
    if let Some(why) = beyond_bounds(spec.limits.as_ref(), allowed, cluster) {
        return Some(why);
    }
    let listed = |list: &[String], value: &str| list.is_empty() || list.iter().any(|v| v == value);
    let ipspace = spec.ipspace.as_deref().unwrap_or("Default");
    if !listed(&allowed.ipspaces, ipspace) {
        return Some(format!(
            "spec.ipspace: the OntapCluster {cluster} does not allow the IPspace {ipspace} (allowed: {})",
            allowed.ipspaces.join(", ")
        ));
    }
    if let Some((i, aggregate)) = spec
        .aggregates
        .iter()
        .enumerate()
        .find(|(_, a)| !listed(&allowed.aggregates, a))
    {
        return Some(format!(
            "spec.aggregates[{i}]: the OntapCluster {cluster} does not allow the aggregate {aggregate} (allowed: {})",
            allowed.aggregates.join(", ")
        ));
    }
    for (field, lif) in lifs_by_field(spec) {
        if let Some(node) = &lif.home_node
            && !listed(&allowed.home_nodes, node)
        {
            return Some(format!(
                "{field}.homeNode: the OntapCluster {cluster} does not allow LIFs on the node {node} (allowed: {})",
                allowed.home_nodes.join(", ")
            ));
        }
        if let Some(port) = &lif.home_port
            && !listed(&allowed.home_ports, port)
        {
            return Some(format!(
                "{field}.homePort: the OntapCluster {cluster} does not allow LIFs on the port {port} (allowed: {})",
                allowed.home_ports.join(", ")
            ));
        }
        if let Some(domain) = &lif.broadcast_domain
            && !listed(&allowed.broadcast_domains, domain)
        {
            return Some(format!(
                "{field}.broadcastDomain: the OntapCluster {cluster} does not allow LIFs in the broadcast domain {domain} (allowed: {})",
                allowed.broadcast_domains.join(", ")
            ));
        }
        let Ok(ip) = lif.ip.parse::<IpAddr>() else {
            continue;
        };
        let in_range = allowed.address_ranges.is_empty()
            || allowed
                .address_ranges
                .iter()
                .any(|range| cidr_contains(range, ip) == Some(true));
        if !in_range {
            return Some(format!(
                "{field}.ip: {ip} lies outside the address ranges the OntapCluster {cluster} allows ({})",
                allowed.address_ranges.join(", ")
            ));
        }
    }
    None
}

/// The LIFs of `spec`, each with where the spec writes it (`spec.dataLifs[1]`): what a
/// condition about one of its fields names.
pub fn lifs_by_field(spec: &StorageVirtualMachineSpec) -> impl Iterator<Item = (String, &LifSpec)> {
    std::iter::once(("spec.managementLif".to_owned(), &spec.management_lif)).chain(
        spec.data_lifs
            .iter()
            .enumerate()
            .map(|(i, lif)| (format!("spec.dataLifs[{i}]"), lif)),
    )
}

/// What a StorageVirtualMachine asks ONTAP for that no other may have on the same cluster.
#[derive(Debug)]
pub struct Claims {
    /// The SVM it provisions; `None` for an `AccountOnly` object, which shares an SVM.
    pub svm_name: Option<String>,
    pub addresses: Vec<IpAddr>,
    /// Its account: SVM name and account name. Two objects setting the passwords of one
    /// account would take turns locking each other out.
    pub account: (String, String),
}

impl Claims {
    /// `svm`'s claims, its SVM named `svm_name`, its account `account`.
    pub fn of(svm: &StorageVirtualMachine, svm_name: String, account: String) -> Self {
        let spec = &svm.spec;
        match spec.mode {
            SvmMode::Owned => Self {
                svm_name: Some(svm_name.clone()),
                addresses: std::iter::once(&spec.management_lif)
                    .chain(&spec.data_lifs)
                    .filter_map(|lif| lif.ip.parse().ok())
                    .collect(),
                account: (svm_name, account),
            },
            SvmMode::AccountOnly => Self {
                svm_name: None,
                addresses: Vec::new(),
                account: (svm_name, account),
            },
        }
    }
}

/// Which of two objects holds a contested claim: one already provisioned in ONTAP, then the
/// older one (creation times have whole seconds), then the first by namespace/name, so every
/// pass (and every replica) decides the same way and a working SVM never loses its claim.
/// Borrows only: it runs for every pair of objects on a cluster, once per pass.
fn precedes(a: &StorageVirtualMachine, b: &StorageVirtualMachine) -> bool {
    precedence(a) < precedence(b)
}

/// The order of [`precedes`]: lower keys hold first.
pub fn precedence(s: &StorageVirtualMachine) -> (bool, Option<Timestamp>, &str, &str) {
    (
        s.status.as_ref().and_then(|st| st.uuid.as_ref()).is_none(),
        s.metadata.creation_timestamp.as_ref().map(|t| t.0),
        s.metadata.namespace.as_deref().unwrap_or_default(),
        s.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// The objects among `others` whose claims `svm` must yield to, should they collide: older ones
/// on the same ONTAP cluster (`same_ontap` compares two OntapClusters' names). Filtering them
/// first spares computing every other object's claims.
pub fn contenders<'a>(
    svm: &'a StorageVirtualMachine,
    others: impl IntoIterator<Item = &'a StorageVirtualMachine>,
    same_ontap: impl Fn(&str, &str) -> bool + 'a,
) -> impl Iterator<Item = &'a StorageVirtualMachine> {
    others.into_iter().filter(move |other| {
        other.metadata.uid != svm.metadata.uid
            && precedes(other, svm)
            && same_ontap(&other.spec.cluster_ref.name, &svm.spec.cluster_ref.name)
    })
}

/// What identifies the ONTAP cluster behind an OntapCluster's endpoint: its host, lowercase,
/// and its port, 443 when none is given. `None` for an endpoint that is no URL.
pub fn ontap_identity(endpoint: &str) -> Option<(String, u16)> {
    let url = reqwest::Url::parse(endpoint).ok()?;
    Some((
        url.host_str()?.to_ascii_lowercase(),
        url.port_or_known_default()?,
    ))
}

/// The first claim of `svm` that an older object on the same cluster already holds, as the
/// message of a condition. `others` are every StorageVirtualMachine the operator sees, each with
/// its claims; `svm` itself among them is skipped.
pub fn contested<'a>(
    svm: &StorageVirtualMachine,
    claims: &Claims,
    others: impl IntoIterator<Item = (&'a StorageVirtualMachine, Claims)>,
) -> Option<String> {
    for (other, theirs) in others {
        if other.metadata.uid == svm.metadata.uid || !precedes(other, svm) {
            continue;
        }
        // A tenant learns that a name is taken, not who took it: through a second OntapCluster
        // on the same ONTAP, the holder may be of a cluster the tenant does not even use.
        let holder = "another StorageVirtualMachine";
        if let Some(name) = &claims.svm_name
            && theirs.svm_name.as_ref() == Some(name)
        {
            return Some(format!(
                "the SVM name {name} on the ONTAP cluster of {} is claimed by {holder}, created earlier; choose another spec.svmName",
                svm.spec.cluster_ref.name
            ));
        }
        if theirs.account == claims.account {
            return Some(format!(
                "the account {} of the SVM {} on the ONTAP cluster of {} is claimed by {holder}, created earlier; choose another spec.account.name",
                claims.account.1, claims.account.0, svm.spec.cluster_ref.name
            ));
        }
        if let Some(address) = claims
            .addresses
            .iter()
            .find(|a| theirs.addresses.contains(a))
        {
            return Some(format!(
                "the LIF address {address} on the ONTAP cluster of {} is claimed by {holder}, created earlier; choose another address",
                svm.spec.cluster_ref.name
            ));
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelectorRequirement, Time};
    use k8s_openapi::jiff::Timestamp;
    use serde_json::json;

    fn svm(namespace: &str, name: &str, created: i64, ips: &[&str]) -> StorageVirtualMachine {
        let mut svm: StorageVirtualMachine = serde_json::from_value(json!({
            "apiVersion": "ontap.storage.dev/v1alpha1",
            "kind": "StorageVirtualMachine",
            "metadata": {"name": name, "namespace": namespace, "uid": format!("{namespace}-{name}")},
            "spec": {
                "clusterRef": {"name": "lab"},
                "managementLif": {"ip": ips[0], "prefixLength": 24},
                "dataLifs": ips[1..].iter().map(|ip| json!({"ip": ip, "prefixLength": 24})).collect::<Vec<_>>(),
            }
        }))
        .unwrap();
        svm.metadata.creation_timestamp = Some(Time(Timestamp::from_second(created).unwrap()));
        svm
    }

    #[test]
    fn no_selector_admits_every_namespace_and_a_selector_only_its_own() {
        let labels: BTreeMap<String, String> = [("tenant".to_owned(), "a".to_owned())].into();
        assert!(namespace_allowed(None, &labels).unwrap());
        let only_b = LabelSelector {
            match_labels: Some([("tenant".to_owned(), "b".to_owned())].into()),
            ..LabelSelector::default()
        };
        assert!(!namespace_allowed(Some(&only_b), &labels).unwrap());
        let a_or_b = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tenant".into(),
                operator: "In".into(),
                values: Some(vec!["a".into(), "b".into()]),
            }]),
            ..LabelSelector::default()
        };
        assert!(namespace_allowed(Some(&a_or_b), &labels).unwrap());
        let broken = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tenant".into(),
                operator: "Near".into(),
                values: None,
            }]),
            ..LabelSelector::default()
        };
        assert!(namespace_allowed(Some(&broken), &labels).is_err());
    }

    #[test]
    fn the_older_object_keeps_a_contested_name_or_address() {
        let first = svm("team-a", "db", 100, &["192.0.2.10", "192.0.2.11"]);
        let later = svm("team-b", "db", 200, &["192.0.2.20", "192.0.2.11"]);
        let claims =
            |s: &StorageVirtualMachine, name: &str| Claims::of(s, name.to_owned(), s.name_any());

        // Distinct names, one shared data address: the later object is refused, the first not.
        let why = contested(
            &later,
            &claims(&later, "b"),
            [(&first, claims(&first, "a")), (&later, claims(&later, "b"))],
        )
        .unwrap();
        assert!(
            why.contains("192.0.2.11") && why.contains("another StorageVirtualMachine"),
            "{why}"
        );
        assert!(
            !why.contains("team-a"),
            "another tenant's namespace is not named: {why}"
        );
        assert!(
            contested(
                &first,
                &claims(&first, "a"),
                [(&later, claims(&later, "b"))]
            )
            .is_none()
        );

        // The same SVM name, no shared address.
        let named = svm("team-a", "other", 300, &["192.0.2.30"]);
        let why = contested(
            &named,
            &claims(&named, "a"),
            [(&first, claims(&first, "a"))],
        )
        .unwrap();
        assert!(
            why.contains("SVM name a") && !why.contains(" db"),
            "no holder is named, not even of the own namespace: {why}"
        );

        // IPv6 spellings of one address are one address.
        let v6 = svm("team-c", "x", 400, &["2001:db8::1"]);
        let v6_again = svm("team-d", "y", 500, &["2001:0db8:0:0::1"]);
        assert!(
            contested(
                &v6_again,
                &claims(&v6_again, "y"),
                [(&v6, claims(&v6, "x"))]
            )
            .is_some()
        );
    }

    #[test]
    fn a_provisioned_object_keeps_its_claim_against_one_of_the_same_second() {
        let mut holder = svm("team-b", "zz", 100, &["192.0.2.10"]);
        holder.status = Some(serde_json::from_value(json!({"uuid": "u-1"})).unwrap());
        let newcomer = svm("team-a", "aa", 100, &["192.0.2.10"]);
        let claims = |s: &StorageVirtualMachine| Claims::of(s, s.name_any(), s.name_any());
        assert!(contested(&newcomer, &claims(&newcomer), [(&holder, claims(&holder))]).is_some());
        assert!(contested(&holder, &claims(&holder), [(&newcomer, claims(&newcomer))]).is_none());
    }

    #[test]
    fn objects_sharing_an_svm_claim_only_their_accounts() {
        let provider = svm("ops", "project", 100, &["192.0.2.10", "192.0.2.11"]);
        let mut shoot_a = svm("shoot-a", "ontap", 200, &["192.0.2.10", "192.0.2.11"]);
        shoot_a.spec.mode = SvmMode::AccountOnly;
        let mut shoot_b = svm("shoot-b", "ontap", 300, &["192.0.2.10", "192.0.2.11"]);
        shoot_b.spec.mode = SvmMode::AccountOnly;
        let claims = |s: &StorageVirtualMachine, account: &str| {
            Claims::of(s, "p1".to_owned(), account.to_owned())
        };
        let everyone = |a: &str, b: &str| {
            [
                (&provider, claims(&provider, "vsadmin-project")),
                (&shoot_a, claims(&shoot_a, a)),
                (&shoot_b, claims(&shoot_b, b)),
            ]
        };
        // Same SVM name and addresses as the provisioning object, accounts of their own.
        assert!(contested(&shoot_a, &claims(&shoot_a, "a"), everyone("a", "b")).is_none());
        assert!(contested(&shoot_b, &claims(&shoot_b, "b"), everyone("a", "b")).is_none());
        assert!(
            contested(
                &provider,
                &claims(&provider, "vsadmin-project"),
                everyone("a", "b")
            )
            .is_none()
        );
        // One account asked for twice: the later object is refused.
        let why = contested(&shoot_b, &claims(&shoot_b, "a"), everyone("a", "a")).unwrap();
        assert!(why.contains("account a of the SVM p1"), "{why}");
        assert!(contested(&shoot_a, &claims(&shoot_a, "a"), everyone("a", "a")).is_none());
    }

    #[test]
    fn an_svm_is_shared_with_its_own_namespace_and_those_its_selector_admits() {
        let mut provider = svm("ops", "project", 100, &["192.0.2.10"]);
        let shoot: BTreeMap<String, String> = [(
            "extensions.gardener.cloud/ontap".to_owned(),
            "true".to_owned(),
        )]
        .into();
        let other = BTreeMap::new();
        assert!(shares_with(&provider, "ops", &other).unwrap());
        assert!(!shares_with(&provider, "shoot--p--a", &shoot).unwrap());
        provider.spec.share_with = Some(LabelSelector {
            match_labels: Some(shoot.clone()),
            ..LabelSelector::default()
        });
        assert!(shares_with(&provider, "shoot--p--a", &shoot).unwrap());
        assert!(!shares_with(&provider, "team-x", &other).unwrap());
    }

    #[test]
    fn an_administrator_bounds_what_objects_choose() {
        let allowed = ClusterAllowances {
            ipspaces: vec!["tenants".into()],
            aggregates: vec!["aggr1".into()],
            home_nodes: vec!["n1".into()],
            home_ports: vec!["e0a-100".into()],
            broadcast_domains: vec!["tenant-a".into()],
            address_ranges: vec!["192.0.2.0/25".into()],
            svms_per_namespace: None,
            tenant_retain: Some(false),
            ..ClusterAllowances::default()
        };
        let mut ok = svm("team-a", "db", 1, &["192.0.2.10", "192.0.2.11"]);
        ok.spec.ipspace = Some("tenants".into());
        ok.spec.aggregates = vec!["aggr1".into()];
        assert_eq!(not_allowed(&ok, &allowed, "lab", true), None);
        let refused = |change: &dyn Fn(&mut StorageVirtualMachine), tenant: bool| {
            let mut svm = ok.clone();
            change(&mut svm);
            not_allowed(&svm, &allowed, "lab", tenant).unwrap_or_default()
        };
        assert!(refused(&|s| s.spec.ipspace = None, true).starts_with("spec.ipspace: "));
        assert!(
            refused(&|s| s.spec.aggregates.push("aggr9".into()), true)
                .starts_with("spec.aggregates[1]: ")
        );
        assert!(
            refused(&|s| s.spec.data_lifs[0].home_node = Some("n2".into()), true)
                .starts_with("spec.dataLifs[0].homeNode: ")
        );
        assert!(
            refused(
                &|s| s.spec.data_lifs[0].home_port = Some("e0a-200".into()),
                true
            )
            .starts_with("spec.dataLifs[0].homePort: ")
        );
        assert!(
            refused(
                &|s| s.spec.management_lif.broadcast_domain = Some("tenant-b".into()),
                true
            )
            .starts_with("spec.managementLif.broadcastDomain: ")
        );
        let why = refused(&|s| s.spec.data_lifs[0].ip = "192.0.2.200".into(), true);
        assert!(why.starts_with("spec.dataLifs[0].ip: 192.0.2.200"), "{why}");
        let retain =
            |s: &mut StorageVirtualMachine| s.spec.deletion_policy = DeletionPolicy::Retain;
        assert!(refused(&retain, true).starts_with("spec.deletionPolicy: "));
        assert_eq!(
            refused(&retain, false),
            "",
            "Gardener's objects retain for a migration"
        );
        assert_eq!(
            not_allowed(&ok, &ClusterAllowances::default(), "lab", true),
            None
        );
    }

    #[test]
    fn only_objects_on_the_same_ontap_contend() {
        let first = svm("team-a", "db", 100, &["192.0.2.10"]);
        let mut elsewhere = svm("team-b", "db", 200, &["192.0.2.10"]);
        elsewhere.spec.cluster_ref.name = "other".into();
        let distinct = |a: &str, b: &str| a == b;
        assert_eq!(contenders(&elsewhere, [&first], distinct).count(), 0);
        let one_ontap = |_: &str, _: &str| true;
        assert_eq!(
            contenders(&elsewhere, [&first], one_ontap).count(),
            1,
            "two OntapClusters on one ONTAP: one set of names"
        );
        assert_eq!(
            contenders(&first, [&elsewhere], one_ontap).count(),
            0,
            "the older holds"
        );
    }

    #[test]
    fn one_ontap_behind_two_spellings_of_its_endpoint() {
        assert_eq!(
            ontap_identity("https://ONTAP.example:443"),
            ontap_identity("https://ontap.example/")
        );
        assert_ne!(
            ontap_identity("https://ontap.example:8443"),
            ontap_identity("https://ontap.example")
        );
        assert_eq!(
            ontap_identity("https://[2001:db8::10]"),
            ontap_identity("https://[2001:DB8:0::10]:443")
        );
    }
}
