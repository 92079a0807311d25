//! Tenant networks (OpenStack Manila's NetApp model): a VLAN port `<basePort>-<tag>` on each
//! node LIFs may be homed on, and a broadcast domain holding exactly those ports, per tenant the
//! OntapCluster's `tenantNetworks` lists. Step `TenantNetworkReady` makes them with a tenant's
//! first SVM, the SVM's unplaced LIFs are created in the domain, and `TenantNetworkRemoved`
//! takes them away with the tenant's last SVM.
//!
//! The tag is the administrator's grant, never the tenant's choice: a VLAN is a network, and a
//! tenant naming another's tag would join it. Whose an object is comes from its standing
//! alone ([`Party`]), as every other right does.
//!
//! ONTAP records no creator of a port or a broadcast domain. The operator's are known by name
//! (`ontap-operator-vlan-<tag>`) and by holding nothing but the tenant's VLAN ports: a domain of
//! that name with any other port, or a VLAN port of the name in another domain, is someone
//! else's, and is neither adopted nor changed.

use std::collections::BTreeSet;

use kube::ResourceExt;
use kube::runtime::events::Recorder;
use kube::runtime::reflector::ObjectRef;

use super::authority::Party;
use super::errors::{Conflict, Failed, ontap_error};
use super::reconcile::SvmStep;
use super::tenancy::lifs_by_field;
use super::{SvmReconciler, tell};
use crate::api::{DeletionPolicy, OntapCluster, StorageVirtualMachine, SvmMode, TenantNetworks};
use crate::ontap::inventory::{PAGE_RECORDS, Snapshot};
use ontap_client::{
    BroadcastDomain, BroadcastDomainCreate, DeleteOutcome, EthernetPort, OntapClient, VlanCreate,
    codes,
};
use reconcile_engine::{Halt, Outcome, StepError, StepFlow, StepRunner};

/// Start of the name of every broadcast domain the operator makes for a tenant.
pub const DOMAIN_PREFIX: &str = "ontap-operator-vlan-";
/// The MTU of a tenant's broadcast domain where `tenantNetworks` names none: ONTAP's default.
const DEFAULT_MTU: u64 = 1500;

/// The network one tenant is granted on one OntapCluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantNetwork {
    /// The broadcast domain, `ontap-operator-vlan-<tag>`.
    pub domain: String,
    pub tag: u16,
    pub base_port: String,
    pub mtu: u64,
    /// The nodes the administrator lets LIFs be homed on; empty: every node with the base port.
    pub nodes: Vec<String>,
}

impl TenantNetwork {
    /// The name ONTAP gives the tenant's VLAN port on every node.
    pub fn port_name(&self) -> String {
        format!("{}-{}", self.base_port, self.tag)
    }
}

/// The broadcast domain of the tenant network with VLAN `tag`.
pub fn domain_name(tag: u16) -> String {
    format!("{DOMAIN_PREFIX}{tag}")
}

/// The network `cluster` grants `party`, if its `tenantNetworks` lists one; an unknown party
/// (a Gardener object whose project is not recorded yet) matches no entry.
pub fn granted(cluster: &OntapCluster, party: &Party) -> Option<TenantNetwork> {
    let networks = cluster.spec.tenant_networks.as_ref()?;
    let entry = networks.vlans.iter().find(|v| match party {
        Party::Namespace(ns) => v.namespace.as_deref() == Some(ns.as_str()),
        Party::Gardener(project) => v.gardener_project.as_deref() == Some(project.as_str()),
        Party::Unknown => false,
    })?;
    Some(TenantNetwork {
        domain: domain_name(entry.tag),
        tag: entry.tag,
        base_port: networks.base_port.clone(),
        mtu: networks.mtu.map_or(DEFAULT_MTU, u64::from),
        nodes: cluster
            .spec
            .allowed
            .as_ref()
            .map(|a| a.home_nodes.clone())
            .unwrap_or_default(),
    })
}

/// Why `cluster` refuses `svm` of `party` for its tenant networks, as the message of a
/// condition naming the field: a LIF naming a port or broadcast domain outside the tenant's
/// network, or no network for a tenant where the administrator requires one. `None`: admitted.
pub fn not_allowed(
    svm: &StorageVirtualMachine,
    cluster: &OntapCluster,
    party: &Party,
) -> Option<String> {
    let networks = cluster.spec.tenant_networks.as_ref()?;
    if svm.spec.mode == SvmMode::AccountOnly {
        return None;
    }
    let name = cluster.name_any();
    let Some(network) = granted(cluster, party) else {
        if networks.required {
            return Some(format!(
                "spec.clusterRef: the OntapCluster {name} requires a tenant network, and grants none to this object's tenant; an administrator adds one to its tenantNetworks.vlans"
            ));
        }
        return others_network_named(svm, networks, &name);
    };
    let port = network.port_name();
    for (field, lif) in lifs_by_field(&svm.spec) {
        if let Some(named) = &lif.home_port
            && *named != port
        {
            return Some(format!(
                "{field}.homePort: the OntapCluster {name} keeps this tenant's LIFs on its VLAN port {port}, not {named}"
            ));
        }
        if let Some(named) = &lif.broadcast_domain
            && *named != network.domain
        {
            return Some(format!(
                "{field}.broadcastDomain: the OntapCluster {name} keeps this tenant's LIFs in its broadcast domain {}, not {named}",
                network.domain
            ));
        }
    }
    None
}

/// Why an object of a tenant granted no network is refused: a LIF naming a VLAN port or a
/// broadcast domain of a tenant network, which are other tenants' (the domain prefix also
/// covers a network whose grant was withdrawn while it was kept). `None`: admitted.
fn others_network_named(
    svm: &StorageVirtualMachine,
    networks: &TenantNetworks,
    cluster: &str,
) -> Option<String> {
    let ports: Vec<String> = networks
        .vlans
        .iter()
        .map(|v| format!("{}-{}", networks.base_port, v.tag))
        .collect();
    lifs_by_field(&svm.spec).find_map(|(field, lif)| {
        if let Some(named) = lif.home_port.as_ref().filter(|p| ports.contains(p)) {
            return Some(format!(
                "{field}.homePort: {named} is a tenant network's VLAN port on the OntapCluster {cluster}, which grants this object's tenant none"
            ));
        }
        lif.broadcast_domain
            .as_ref()
            .filter(|d| d.starts_with(DOMAIN_PREFIX))
            .map(|named| format!(
                "{field}.broadcastDomain: {named} is a tenant network's broadcast domain on the OntapCluster {cluster}, which grants this object's tenant none"
            ))
    })
}

/// What ONTAP needs for a tenant network to be as wanted.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct NetworkPlan {
    pub create_domain: Option<BroadcastDomainCreate>,
    /// Each in the tenant's domain, made after it.
    pub create_vlans: Vec<VlanCreate>,
}

impl NetworkPlan {
    pub fn is_empty(&self) -> bool {
        self.create_domain.is_none() && self.create_vlans.is_empty()
    }
}

/// The nodes the tenant's VLAN ports belong on: those the administrator lets LIFs be homed on,
/// else every node with the base port (the ports list every node's).
fn nodes(network: &TenantNetwork, ports: &[EthernetPort]) -> BTreeSet<String> {
    if !network.nodes.is_empty() {
        return network.nodes.iter().cloned().collect();
    }
    ports
        .iter()
        .filter(|p| p.name == network.base_port)
        .filter_map(|p| p.node.as_ref()?.name.clone())
        .collect()
}

/// The node of a port, as ONTAP names it.
fn node_of(port: &EthernetPort) -> Option<&str> {
    port.node.as_ref()?.name.as_deref()
}

/// What makes `network` as wanted, given the cluster's `ports` and broadcast `domains`; an
/// error, the message of a conflict, where ONTAP holds something of the network's names that
/// the operator did not make.
pub fn plan_network(
    network: &TenantNetwork,
    ports: &[EthernetPort],
    domains: &[BroadcastDomain],
) -> Result<NetworkPlan, String> {
    let port = network.port_name();
    let nodes = nodes(network, ports);
    let domain = domains.iter().find(|d| d.name == network.domain);
    if let Some(domain) = domain
        && let Some(foreign) = domain.ports.iter().find(|p| {
            p.name.as_deref() != Some(port.as_str())
                || !p
                    .node
                    .as_ref()
                    .and_then(|n| n.name.as_ref())
                    .is_some_and(|n| nodes.contains(n))
        })
    {
        return Err(format!(
            "the broadcast domain {} holds the port {} of node {}, which is not this tenant network's: the operator did not make it and leaves it alone; remove the domain in ONTAP or grant another tag",
            network.domain,
            foreign.name.as_deref().unwrap_or("?"),
            foreign
                .node
                .as_ref()
                .and_then(|n| n.name.as_deref())
                .unwrap_or("?"),
        ));
    }
    let mut plan = NetworkPlan {
        create_domain: domain.is_none().then(|| BroadcastDomainCreate {
            name: network.domain.clone(),
            mtu: network.mtu,
            ipspace: None,
        }),
        create_vlans: Vec::new(),
    };
    for node in &nodes {
        let existing = ports
            .iter()
            .find(|p| p.name == port && node_of(p) == Some(node.as_str()));
        match existing {
            None => plan.create_vlans.push(VlanCreate {
                node: node.clone(),
                base_port: network.base_port.clone(),
                tag: network.tag,
                broadcast_domain: Some(network.domain.clone()),
            }),
            Some(existing)
                if existing
                    .broadcast_domain
                    .as_ref()
                    .and_then(|d| d.name.as_deref())
                    == Some(network.domain.as_str()) => {}
            Some(_) => {
                return Err(format!(
                    "the VLAN port {port} of node {node} exists outside the broadcast domain {}: the operator did not make it and leaves it alone; remove it in ONTAP or grant another tag",
                    network.domain
                ));
            }
        }
    }
    Ok(plan)
}

/// Whether `snapshot` read the cluster's network and shows `network` as wanted.
pub fn confirmed(network: &TenantNetwork, snapshot: &Snapshot) -> bool {
    snapshot.network().is_some_and(|n| {
        plan_network(network, &n.ports, &n.domains).is_ok_and(|plan| plan.is_empty())
    })
}

/// Step `TenantNetworkReady`: the tenant's VLAN ports and broadcast domain exist. Confirmed
/// from a steady object's `snapshot` where it read the network; otherwise read. Each port or
/// domain made is told as an Event on `svm`.
pub(super) async fn ensure_tenant_network(
    svm: &StorageVirtualMachine,
    network: Option<&TenantNetwork>,
    snapshot: Option<&Snapshot>,
    client: &OntapClient,
    recorder: &Recorder,
) -> StepFlow<Outcome> {
    let Some(network) = network else {
        return Ok(Outcome::unchanged());
    };
    if snapshot.is_some_and(|s| confirmed(network, s)) {
        return Ok(Outcome::unchanged());
    }
    let (ports, domains) = read_network(client, network).await?;
    let plan = plan_network(network, &ports, &domains)
        .map_err(|why| Conflict::TenantNetworkForeign.error(why))?;
    if plan.is_empty() {
        return Ok(Outcome::unchanged());
    }
    let mut made = Vec::new();
    let created = create_planned(&plan, client, &mut made).await;
    // What was made is told also when a later request failed.
    if !made.is_empty() {
        let note = format!(
            "made for the tenant network of VLAN {}: {}",
            network.tag,
            made.join(", ")
        );
        tell(
            recorder,
            svm,
            "TenantNetworkCreated",
            "TenantNetworkCreated",
            note,
        )
        .await;
    }
    created?;
    Ok(Outcome::changed())
}

/// Carries out `plan`, the domain first so that each VLAN port joins it as it is made; what is
/// made goes into `made`. An ambiguous failure is settled by the next pass, which reads them
/// again.
async fn create_planned(
    plan: &NetworkPlan,
    client: &OntapClient,
    made: &mut Vec<String>,
) -> Result<(), StepError> {
    if let Some(domain) = &plan.create_domain {
        client
            .create_broadcast_domain(domain)
            .await
            .map_err(|e| ontap_error(Failed::BroadcastDomainCreate, e))?;
        made.push(format!("the broadcast domain {}", domain.name));
    }
    for vlan in &plan.create_vlans {
        client
            .create_vlan(vlan)
            .await
            .map_err(|e| ontap_error(Failed::VlanCreate, e))?;
        made.push(format!(
            "the VLAN port {} of node {}",
            vlan.port_name(),
            vlan.node
        ));
    }
    Ok(())
}

/// The cluster's ports (every node's: which nodes have the base port), and the network's
/// broadcast domain if it exists.
async fn read_network(
    client: &OntapClient,
    network: &TenantNetwork,
) -> Result<(Vec<EthernetPort>, Vec<BroadcastDomain>), StepError> {
    let ports = client
        .ethernet_ports()
        .await
        .map_err(|e| ontap_error(Failed::TenantNetworkLookup, e))?;
    let domain = client
        .broadcast_domain_by_name(&network.domain)
        .await
        .map_err(|e| ontap_error(Failed::TenantNetworkLookup, e))?;
    Ok((ports, domain.into_iter().collect()))
}

/// Whether `other` still uses the tenant network of `party` on `cluster` that `leaving` is about
/// to give up: an `Owned` object of the same party on the same cluster, provisioned or not, that
/// is not itself being deleted with its SVM (a retained one keeps its SVM and LIFs on the
/// network). `party_of` gives an object's party.
pub fn still_uses(
    other: &StorageVirtualMachine,
    leaving: &StorageVirtualMachine,
    party: &Party,
    party_of: impl Fn(&StorageVirtualMachine) -> Party,
) -> bool {
    other.metadata.uid != leaving.metadata.uid
        && other.spec.mode == SvmMode::Owned
        && other.spec.cluster_ref == leaving.spec.cluster_ref
        && !(other.metadata.deletion_timestamp.is_some()
            && other.spec.deletion_policy == DeletionPolicy::Delete)
        && party_of(other) == *party
}

/// Cleanup step `TenantNetworkRemoved`, run once the tenant's last SVM on the cluster is gone:
/// its VLAN ports, then its broadcast domain, are deleted. ONTAP refusing a port that still
/// hosts an interface, or a domain that still has ports, means something still uses it: it is
/// kept, and the step is done (nothing is lost; the next tenant SVM finds it as wanted). A
/// domain that is not wholly the operator's is left alone.
pub(super) async fn remove_tenant_network(
    svm: &StorageVirtualMachine,
    network: &TenantNetwork,
    client: &OntapClient,
    recorder: &Recorder,
) -> StepFlow<Outcome> {
    let (ports, domains) = read_network(client, network).await?;
    let Some(domain) = domains.iter().find(|d| d.name == network.domain) else {
        return Ok(Outcome::unchanged());
    };
    if plan_network(network, &ports, &domains).is_err() {
        tracing::info!(
            domain = network.domain,
            "the tenant network's broadcast domain holds ports the operator did not make; it is left as it is"
        );
        return Ok(Outcome::unchanged());
    }
    // A port is kept whole or not at all: deleting the nodes' ports no interface is homed on
    // would leave an SVM still on the network (a retained one, one made by hand) without its
    // failover ports.
    let homed = homed_on(client, network).await?;
    if !homed.is_empty() {
        let note = format!(
            "the tenant network {} is kept: {} still homed on it",
            network.domain,
            homed.join(", ")
        );
        tell(
            recorder,
            svm,
            "TenantNetworkKept",
            "TenantNetworkKept",
            note,
        )
        .await;
        return Ok(Outcome::unchanged());
    }
    let mut removed = Vec::new();
    let result = remove_owned(network, &ports, domain, client, &mut removed).await;
    // What was removed is told also when a later request failed.
    if !removed.is_empty() {
        let note = format!("removed with the tenant's last SVM: {}", removed.join(", "));
        tell(
            recorder,
            svm,
            "TenantNetworkRemoved",
            "TenantNetworkRemoved",
            note,
        )
        .await;
    }
    result
}

/// The interfaces homed on the network's VLAN ports, as `interface of SVM` (a listing of the
/// cluster's interfaces, read only when a tenant's last SVM is gone).
async fn homed_on(client: &OntapClient, network: &TenantNetwork) -> Result<Vec<String>, StepError> {
    let port = network.port_name();
    let lookup = |e| ontap_error(Failed::TenantNetworkLookup, e);
    let mut pages = client.interface_pages(PAGE_RECORDS).map_err(lookup)?;
    let mut homed = Vec::new();
    while let Some(page) = pages.next_page().await.map_err(lookup)? {
        homed.extend(
            page.into_iter()
                .filter(|i| {
                    i.location
                        .as_ref()
                        .and_then(|l| l.home_port.as_ref())
                        .and_then(|p| p.name.as_deref())
                        == Some(port.as_str())
                })
                .map(|i| {
                    let svm = i.svm.and_then(|s| s.name).unwrap_or_default();
                    format!("interface {} of SVM {svm}", i.name)
                }),
        );
    }
    Ok(homed)
}

/// Deletes the network's VLAN ports among `ports`, then its `domain`, unless ONTAP keeps a
/// port for an interface homed on it; what is deleted goes into `removed`.
async fn remove_owned(
    network: &TenantNetwork,
    ports: &[EthernetPort],
    domain: &BroadcastDomain,
    client: &OntapClient,
    removed: &mut Vec<String>,
) -> StepFlow<Outcome> {
    let port = network.port_name();
    let mut ours: Vec<&EthernetPort> = ports
        .iter()
        .filter(|p| {
            p.name == port
                && p.broadcast_domain.as_ref().and_then(|d| d.name.as_deref())
                    == Some(network.domain.as_str())
        })
        .collect();
    // Node by node, so that the Event reads the same whatever order ONTAP lists them in.
    ours.sort_by_key(|p| node_of(p));
    let mut kept = false;
    for vlan in ours {
        match client.delete_port(&vlan.uuid).await {
            Ok(DeleteOutcome::Deleted) => removed.push(format!(
                "the VLAN port {port} of node {}",
                node_of(vlan).unwrap_or("?")
            )),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.ontap_code(),
                    Some(codes::PORT_HOSTS_INTERFACE | codes::PORT_HAS_INTERFACE_BOUND)
                ) =>
            {
                kept = true
            }
            Err(e) => return Err(ontap_error(Failed::VlanDelete, e).into()),
        }
    }
    if kept {
        tracing::info!(
            domain = network.domain,
            "an interface is still homed on the tenant network; it is kept"
        );
        return Ok(Outcome::changed());
    }
    match client.delete_broadcast_domain(&domain.uuid).await {
        Ok(DeleteOutcome::Deleted) => {
            removed.push(format!("the broadcast domain {}", network.domain));
        }
        Ok(_) => {}
        Err(e) if e.ontap_code() == Some(codes::BROADCAST_DOMAIN_HAS_PORTS) => {}
        Err(e) => return Err(ontap_error(Failed::BroadcastDomainDelete, e).into()),
    }
    Ok(Outcome::changed())
}

impl SvmReconciler {
    /// `svm`'s party: whose it is, as only an administrator or gardenlet can make it.
    pub(super) fn party(&self, svm: &StorageVirtualMachine) -> Party {
        self.standings
            .of(svm)
            .party(&svm.namespace().unwrap_or_default())
    }

    /// The tenant network `svm`'s cluster grants its party, if any (none while the cluster is
    /// not cached).
    pub(super) fn tenant_network(&self, svm: &StorageVirtualMachine) -> Option<TenantNetwork> {
        let cluster = self
            .clusters
            .get(&ObjectRef::new(&svm.spec.cluster_ref.name))?;
        granted(&cluster, &self.party(svm))
    }

    /// Cleanup of an `Owned` object whose SVM is gone: its tenant network goes too, once no
    /// other object of its party on the cluster uses it (decided from the objects, those not
    /// provisioned yet included).
    pub(super) async fn release_tenant_network(
        &self,
        svm: &StorageVirtualMachine,
        client: &OntapClient,
        steps: &mut StepRunner<SvmStep>,
    ) -> Result<(), Halt> {
        let Some(network) = self.tenant_network(svm) else {
            return Ok(());
        };
        let party = self.party(svm);
        let used = self
            .svms
            .store()
            .state()
            .iter()
            .any(|other| still_uses(other, svm, &party, |o| self.party(o)));
        if used {
            return Ok(());
        }
        steps
            .step(SvmStep::TenantNetworkRemoved, || {
                remove_tenant_network(svm, &network, client, &self.recorder)
            })
            .await
            .map(drop)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(networks: serde_json::Value) -> OntapCluster {
        serde_json::from_value(json!({
            "apiVersion": "ontap.storage.dev/v1alpha1", "kind": "OntapCluster",
            "metadata": {"name": "lab"},
            "spec": {
                "endpoint": "https://10.0.0.10",
                "credentialsSecretRef": {"namespace": "ops", "name": "admin"},
                "tenantNetworks": networks,
            }
        }))
        .unwrap()
    }

    fn lab() -> OntapCluster {
        cluster(json!({
            "basePort": "e0d",
            "vlans": [{"namespace": "team-a", "tag": 120}, {"gardenerProject": "p1", "tag": 121}],
        }))
    }

    fn port(node: &str, name: &str, domain: Option<&str>) -> EthernetPort {
        serde_json::from_value(json!({
            "uuid": format!("{node}-{name}"), "name": name, "node": {"name": node},
            "broadcast_domain": domain.map(|d| json!({"name": d})),
        }))
        .unwrap()
    }

    fn domain(name: &str, ports: &[(&str, &str)]) -> BroadcastDomain {
        serde_json::from_value(json!({
            "uuid": format!("bd-{name}"), "name": name,
            "ports": ports.iter().map(|(node, port)| json!({"name": port, "node": {"name": node}})).collect::<Vec<_>>(),
        }))
        .unwrap()
    }

    fn physical() -> Vec<EthernetPort> {
        ["node-01", "node-02"]
            .iter()
            .flat_map(|n| {
                [
                    port(n, "e0c", Some("Default")),
                    port(n, "e0d", Some("Default")),
                ]
            })
            .collect()
    }

    #[test]
    fn a_party_gets_only_its_own_entry() {
        let lab = lab();
        let a = granted(&lab, &Party::Namespace("team-a".into())).unwrap();
        assert_eq!(
            (a.domain.as_str(), a.port_name()),
            ("ontap-operator-vlan-120", "e0d-120".into())
        );
        assert_eq!(a.mtu, 1500);
        assert_eq!(
            granted(&lab, &Party::Gardener("p1".into())).unwrap().tag,
            121
        );
        assert_eq!(
            granted(&lab, &Party::Namespace("p1".into())),
            None,
            "a namespace named like a project is not it"
        );
        assert_eq!(granted(&lab, &Party::Gardener("team-a".into())), None);
        assert_eq!(granted(&lab, &Party::Unknown), None);
    }

    #[test]
    fn a_new_network_is_a_domain_and_a_vlan_port_on_every_node() {
        let network = granted(&lab(), &Party::Namespace("team-a".into())).unwrap();
        let plan = plan_network(&network, &physical(), &[domain("Default", &[])]).unwrap();
        assert_eq!(plan.create_domain.unwrap().name, "ontap-operator-vlan-120");
        let nodes: Vec<_> = plan
            .create_vlans
            .iter()
            .map(|v| (v.node.as_str(), v.port_name()))
            .collect();
        assert_eq!(
            nodes,
            [("node-01", "e0d-120".into()), ("node-02", "e0d-120".into())]
        );
        assert!(
            plan.create_vlans
                .iter()
                .all(|v| v.broadcast_domain.as_deref() == Some("ontap-operator-vlan-120"))
        );

        // Only the nodes the administrator allows.
        let mut only = network.clone();
        only.nodes = vec!["node-02".into()];
        let plan = plan_network(&only, &physical(), &[]).unwrap();
        assert_eq!(plan.create_vlans.len(), 1);
        assert_eq!(plan.create_vlans[0].node, "node-02");
    }

    #[test]
    fn a_made_network_needs_nothing_and_a_missing_port_is_made_again() {
        let network = granted(&lab(), &Party::Namespace("team-a".into())).unwrap();
        let name = network.domain.as_str();
        let mut ports = physical();
        ports.push(port("node-01", "e0d-120", Some(name)));
        ports.push(port("node-02", "e0d-120", Some(name)));
        let made = domain(name, &[("node-01", "e0d-120"), ("node-02", "e0d-120")]);
        assert!(plan_network(&network, &ports, &[made]).unwrap().is_empty());

        ports.pop();
        let drifted = domain(name, &[("node-01", "e0d-120")]);
        let plan = plan_network(&network, &ports, &[drifted]).unwrap();
        assert!(plan.create_domain.is_none());
        assert_eq!(plan.create_vlans.len(), 1);
        assert_eq!(plan.create_vlans[0].node, "node-02");
    }

    #[test]
    fn what_the_operator_did_not_make_is_a_conflict() {
        let network = granted(&lab(), &Party::Namespace("team-a".into())).unwrap();
        let name = network.domain.as_str();
        // A domain of the name holding another port.
        let foreign = domain(name, &[("node-01", "e0c")]);
        let why = plan_network(&network, &physical(), &[foreign]).unwrap_err();
        assert!(why.contains("e0c") && why.contains(name), "{why}");
        // The VLAN port of the name, in another domain.
        let mut ports = physical();
        ports.push(port("node-01", "e0d-120", Some("Default")));
        let why = plan_network(&network, &ports, &[]).unwrap_err();
        assert!(why.contains("e0d-120 of node node-01"), "{why}");
    }

    fn object(lif: serde_json::Value) -> StorageVirtualMachine {
        serde_json::from_value(json!({
            "apiVersion": "ontap.storage.dev/v1alpha1", "kind": "StorageVirtualMachine",
            "metadata": {"name": "db", "namespace": "team-a", "uid": "u-1"},
            "spec": {
                "clusterRef": {"name": "lab"},
                "managementLif": {"ip": "192.0.2.10", "prefixLength": 24},
                "dataLifs": [lif],
            }
        }))
        .unwrap()
    }

    #[test]
    fn a_lif_outside_the_tenant_network_is_refused_naming_the_field() {
        let lab = lab();
        let a = Party::Namespace("team-a".into());
        let plain = object(json!({"ip": "192.0.2.11", "prefixLength": 24}));
        assert_eq!(not_allowed(&plain, &lab, &a), None);
        let own = object(
            json!({"ip": "192.0.2.11", "prefixLength": 24, "homeNode": "node-01", "homePort": "e0d-120"}),
        );
        assert_eq!(not_allowed(&own, &lab, &a), None);
        let other_port = object(
            json!({"ip": "192.0.2.11", "prefixLength": 24, "homeNode": "node-01", "homePort": "e0d-121"}),
        );
        assert!(
            not_allowed(&other_port, &lab, &a)
                .unwrap()
                .starts_with("spec.dataLifs[0].homePort: ")
        );
        let other_domain = object(
            json!({"ip": "192.0.2.11", "prefixLength": 24, "broadcastDomain": "ontap-operator-vlan-121"}),
        );
        assert!(
            not_allowed(&other_domain, &lab, &a)
                .unwrap()
                .starts_with("spec.dataLifs[0].broadcastDomain: ")
        );

        // Without an entry: placed as anywhere, but never on a tenant's network, and refused
        // where the administrator requires one.
        let b = Party::Namespace("team-b".into());
        assert_eq!(not_allowed(&plain, &lab, &b), None);
        let elsewhere = object(
            json!({"ip": "192.0.2.11", "prefixLength": 24, "homeNode": "node-01", "homePort": "e0d-300"}),
        );
        assert_eq!(not_allowed(&elsewhere, &lab, &b), None);
        assert!(
            not_allowed(&other_port, &lab, &b)
                .unwrap()
                .starts_with("spec.dataLifs[0].homePort: e0d-121 is a tenant network's")
        );
        let withdrawn = object(
            json!({"ip": "192.0.2.11", "prefixLength": 24, "broadcastDomain": "ontap-operator-vlan-99"}),
        );
        assert!(
            not_allowed(&withdrawn, &lab, &b)
                .unwrap()
                .starts_with("spec.dataLifs[0].broadcastDomain: ")
        );
        let required = cluster(
            json!({"basePort": "e0d", "required": true, "vlans": [{"namespace": "team-a", "tag": 120}]}),
        );
        assert!(
            not_allowed(&plain, &required, &b)
                .unwrap()
                .starts_with("spec.clusterRef: ")
        );
        assert!(not_allowed(&plain, &required, &Party::Unknown).is_some());
        assert_eq!(not_allowed(&plain, &required, &a), None);
    }

    #[test]
    fn a_network_is_used_until_the_last_owned_object_of_its_party_goes() {
        let leaving = object(json!({"ip": "192.0.2.11", "prefixLength": 24}));
        let mut other = leaving.clone();
        other.metadata.uid = Some("u-2".into());
        let party = Party::Namespace("team-a".into());
        let same = |_: &StorageVirtualMachine| Party::Namespace("team-a".into());
        assert!(!still_uses(&leaving, &leaving, &party, same), "not itself");
        assert!(
            still_uses(&other, &leaving, &party, same),
            "provisioned or not"
        );
        let elsewhere = |_: &StorageVirtualMachine| Party::Namespace("team-b".into());
        assert!(!still_uses(&other, &leaving, &party, elsewhere));
        let mut gone = other.clone();
        gone.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::now(),
            ));
        assert!(
            !still_uses(&gone, &leaving, &party, same),
            "deleted with its SVM"
        );
        gone.spec.deletion_policy = DeletionPolicy::Retain;
        assert!(
            still_uses(&gone, &leaving, &party, same),
            "its SVM stays on the network"
        );
        let mut account = other.clone();
        account.spec.mode = SvmMode::AccountOnly;
        assert!(!still_uses(&account, &leaving, &party, same));
        let mut other_cluster = other;
        other_cluster.spec.cluster_ref.name = "other".into();
        assert!(!still_uses(&other_cluster, &leaving, &party, same));
    }
}
