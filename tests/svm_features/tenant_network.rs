//! Tenant networks (issue 41, Manila's model): the OntapCluster grants each tenant a VLAN; its
//! first SVM makes a VLAN port on every node and a broadcast domain holding them, its LIFs are
//! placed there, its last SVM takes them away. What the operator did not make is left alone, a
//! port deleted behind its back is made again, a fault during each new request is survived, and
//! a resync still costs one login per SVM.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::mock::fast_mock;
use crate::support::resync::{inventory_read, resync_window};
use crate::support::svm::SvmWorld;
use crate::support::{create_namespace, gone, poll};

const READY_WITHIN: Duration = Duration::from_secs(90);

/// The VLAN ports ONTAP lists: `(node, port, broadcast domain)`.
async fn ports(world: &SvmWorld) -> BTreeSet<(String, String, String)> {
    let listed = world
        .mock
        .as_admin(
            Method::GET,
            "/api/network/ethernet/ports?fields=name,type,node.name,broadcast_domain.name",
            Value::Null,
        )
        .await;
    listed["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "vlan")
        .map(|p| {
            (
                p["node"]["name"].as_str().unwrap().to_owned(),
                p["name"].as_str().unwrap().to_owned(),
                p["broadcast_domain"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

/// The broadcast domain `name`'s ports as `node:port`, sorted; `None` when there is no such
/// domain.
async fn domain(world: &SvmWorld, name: &str) -> Option<Vec<String>> {
    let listed = world
        .mock
        .as_admin(
            Method::GET,
            &format!("/api/network/ethernet/broadcast-domains?name={name}&fields=name,ports"),
            Value::Null,
        )
        .await;
    let record = listed["records"].as_array().unwrap().first()?.clone();
    let mut ports: Vec<String> = record["ports"]
        .as_array()
        .map(|ports| {
            ports
                .iter()
                .map(|p| {
                    format!(
                        "{}:{}",
                        p["node"]["name"].as_str().unwrap_or_default(),
                        p["name"].as_str().unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    ports.sort();
    Some(ports)
}

/// The uuid of the port `name` of `node`.
async fn port_uuid(world: &SvmWorld, node: &str, name: &str) -> String {
    let listed = world
        .mock
        .as_admin(
            Method::GET,
            &format!("/api/network/ethernet/ports?node.name={node}&name={name}&fields=uuid"),
            Value::Null,
        )
        .await;
    listed["records"][0]["uuid"].as_str().unwrap().to_owned()
}

/// The uuid of the broadcast domain `name`.
async fn domain_uuid(world: &SvmWorld, name: &str) -> String {
    let listed = world
        .mock
        .as_admin(
            Method::GET,
            &format!("/api/network/ethernet/broadcast-domains?name={name}&fields=uuid"),
            Value::Null,
        )
        .await;
    listed["records"][0]["uuid"].as_str().unwrap().to_owned()
}

/// The home ports of the interfaces of the SVM `svm_name`.
fn home_ports(world: &SvmWorld, svm_name: &str) -> BTreeSet<String> {
    world.state()["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["svm"]["name"] == svm_name)
        .map(|i| {
            i["location"]["home_port"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// Grants VLANs on the world's cluster: `vlans` as `tenantNetworks.vlans`.
async fn grant(world: &SvmWorld, vlans: Value) -> Result<(), String> {
    world
        .clusters()
        .patch(
            &world.cluster,
            &PatchParams::default(),
            &Patch::Merge(
                json!({ "spec": { "tenantNetworks": { "basePort": "e0d", "vlans": vlans } } }),
            ),
        )
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Creates the object `manifest` in `namespace`.
async fn create_in(world: &SvmWorld, namespace: &str, mut manifest: Value) {
    manifest["metadata"]["namespace"] = namespace.into();
    world
        .svms_in(namespace)
        .create(
            &PostParams::default(),
            &serde_json::from_value(manifest).unwrap(),
        )
        .await
        .unwrap();
}

/// Waits until `name` of `namespace` is Ready at its generation; gives its SVM's name and its
/// status's `tenantNetwork`.
async fn ready_in(world: &SvmWorld, namespace: &str, name: &str) -> (String, Option<String>) {
    let svms = world.svms_in(namespace);
    poll(
        &format!("{namespace}/{name} Ready"),
        READY_WITHIN,
        async || {
            let svm = svms.get(name).await.map_err(|e| e.to_string())?;
            let status = svm.status.clone().unwrap_or_default();
            let ready = status
                .conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            if ready && status.observed_generation == svm.metadata.generation {
                Ok((status.svm_name.unwrap(), status.tenant_network))
            } else {
                Err(format!("{:?}", status.conditions))
            }
        },
    )
    .await
}

/// Deletes `name` of `namespace` and waits until it is gone.
async fn delete_in(world: &SvmWorld, namespace: &str, name: &str) {
    world
        .svms_in(namespace)
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
    gone(&world.svms_in(namespace), name, READY_WITHIN)
        .await
        .unwrap();
}

/// The notes of the Events of `reason` in `namespace`.
async fn events(world: &SvmWorld, namespace: &str, reason: &str) -> Vec<String> {
    Api::<Event>::namespaced(world.env.client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .filter_map(|e| e.message)
        .collect()
}

fn vlan_ports(tag: u16, domain: &str) -> BTreeSet<(String, String, String)> {
    ["node-01", "node-02"]
        .iter()
        .map(|n| (n.to_string(), format!("e0d-{tag}"), domain.to_owned()))
        .collect()
}

fn registered_ports(tag: u16) -> Vec<String> {
    vec![format!("node-01:e0d-{tag}"), format!("node-02:e0d-{tag}")]
}

#[tokio::test]
async fn each_tenant_gets_its_own_network_with_its_first_svm_and_loses_it_with_its_last() {
    let world = SvmWorld::tenanted(fast_mock(), &[]).await;
    let team_a = world.env.namespace.clone();
    let team_b = "team-b";
    create_namespace(&world.env.client, team_b, json!({})).await;
    grant(
        &world,
        json!([{ "namespace": team_a, "tag": 120 }, { "namespace": team_b, "tag": 121 }]),
    )
    .await
    .unwrap();

    // Two SVMs of one tenant at once, one of another.
    create_in(&world, &team_a, world.svm_with("a1", 0, &json!({}))).await;
    create_in(&world, &team_a, world.svm_with("a2", 1, &json!({}))).await;
    create_in(&world, team_b, world.svm_with("b1", 2, &json!({}))).await;
    let retained = json!({ "deletionPolicy": "Retain" });
    create_in(&world, team_b, world.svm_with("b0", 4, &retained)).await;
    let (a1, a1_network) = ready_in(&world, &team_a, "a1").await;
    let (a2, a2_network) = ready_in(&world, &team_a, "a2").await;
    let (b1, b1_network) = ready_in(&world, team_b, "b1").await;
    let (b0, _) = ready_in(&world, team_b, "b0").await;
    assert_eq!(a1_network.as_deref(), Some("ontap-operator-vlan-120"));
    assert_eq!(a2_network.as_deref(), Some("ontap-operator-vlan-120"));
    assert_eq!(b1_network.as_deref(), Some("ontap-operator-vlan-121"));

    // One VLAN port per node and tenant, each domain holding exactly its tenant's.
    let mut wanted = vlan_ports(120, "ontap-operator-vlan-120");
    wanted.extend(vlan_ports(121, "ontap-operator-vlan-121"));
    assert_eq!(ports(&world).await, wanted);
    assert_eq!(
        domain(&world, "ontap-operator-vlan-120").await,
        Some(registered_ports(120))
    );
    assert_eq!(
        domain(&world, "ontap-operator-vlan-121").await,
        Some(registered_ports(121))
    );
    // Every LIF on its own tenant's VLAN.
    for (svm, port) in [(&a1, "e0d-120"), (&a2, "e0d-120"), (&b1, "e0d-121")] {
        assert_eq!(
            home_ports(&world, svm),
            BTreeSet::from([port.to_owned()]),
            "{svm}"
        );
    }
    // Told on the objects that made them (one Event per pass: which object made which part
    // depends on which pass came first).
    let created = events(&world, &team_a, "TenantNetworkCreated")
        .await
        .join("; ");
    assert!(
        created.contains("the broadcast domain ontap-operator-vlan-120"),
        "{created}"
    );

    // A LIF naming the other tenant's network is refused, naming the field.
    let intruder = world.svm_with(
        "a3",
        3,
        &json!({ "dataLifs": [{ "ip": "192.0.2.61", "prefixLength": 24, "broadcastDomain": "ontap-operator-vlan-121" }] }),
    );
    create_in(&world, &team_a, intruder).await;
    let why = world
        .refused_in(&team_a, "a3", "ClusterReady", "NotAllowedByCluster")
        .await;
    assert!(
        why.starts_with("spec.dataLifs[0].broadcastDomain: "),
        "{why}"
    );
    delete_in(&world, &team_a, "a3").await;

    // The first of a tenant's two SVMs goes: its network stays for the other.
    delete_in(&world, &team_a, "a1").await;
    assert_eq!(ports(&world).await, wanted, "still used by a2");
    world.wait_ready("a2", READY_WITHIN).await;

    // The last goes: its network with it, the other tenant's untouched.
    delete_in(&world, &team_a, "a2").await;
    assert_eq!(
        ports(&world).await,
        vlan_ports(121, "ontap-operator-vlan-121")
    );
    assert_eq!(domain(&world, "ontap-operator-vlan-120").await, None);
    assert_eq!(
        domain(&world, "ontap-operator-vlan-121").await,
        Some(registered_ports(121))
    );
    let removed = events(&world, &team_a, "TenantNetworkRemoved").await;
    assert_eq!(
        removed,
        [
            "removed with the tenant's last SVM: the VLAN port e0d-120 of node node-01, the VLAN port e0d-120 of node node-02, the broadcast domain ontap-operator-vlan-120"
        ],
        "told once, by the last SVM"
    );
    ready_in(&world, team_b, "b1").await;

    // A retained SVM stays on its network: the last object's deletion keeps all of it.
    for name in ["b0", "b1"] {
        delete_in(&world, team_b, name).await;
    }
    assert_eq!(
        ports(&world).await,
        vlan_ports(121, "ontap-operator-vlan-121")
    );
    assert_eq!(
        domain(&world, "ontap-operator-vlan-121").await,
        Some(registered_ports(121))
    );
    let kept = events(&world, team_b, "TenantNetworkKept").await.join("; ");
    assert!(kept.contains(&format!("of SVM {b0}")), "{kept}");
    assert!(
        events(&world, team_b, "TenantNetworkRemoved")
            .await
            .is_empty(),
        "nothing removed"
    );
}

#[tokio::test]
async fn a_foreign_domain_is_left_alone_drift_is_repaired_and_faults_are_survived() {
    let world = SvmWorld::with(fast_mock(), &["--sync-period=4s"]).await;
    let namespace = world.env.namespace.clone();
    const DOMAIN: &str = "ontap-operator-vlan-130";
    // Someone made a domain of the tenant network's name, with a port of their own.
    world.admin_vlan(DOMAIN, "node-01", "e0c", 7).await;
    grant(&world, json!([{ "namespace": namespace, "tag": 130 }]))
        .await
        .unwrap();
    world.create_svm("tn", 0).await;
    let why = world
        .refused_in(
            &namespace,
            "tn",
            "TenantNetworkReady",
            "TenantNetworkConflict",
        )
        .await;
    assert!(why.contains("node-01") && why.contains("e0c-7"), "{why}");
    assert_eq!(
        domain(&world, DOMAIN).await,
        Some(vec!["node-01:e0c-7".to_owned()]),
        "untouched"
    );
    assert!(
        ports(&world)
            .await
            .iter()
            .all(|(_, port, _)| port == "e0c-7"),
        "no VLAN port made"
    );

    // The administrator removes it; every new request fails once on the way.
    let fail_once = |method: &str, path: &str| {
        world.mock.fault_json(json!({
            "method": method, "path": path, "times": 1,
            "action": { "type": "error", "status": 500, "code": "13434889", "message": "internal error" }
        }))
    };
    let foreign_port = port_uuid(&world, "node-01", "e0c-7").await;
    let foreign_domain = domain_uuid(&world, DOMAIN).await;
    let faults = [
        fail_once("GET", "/api/network/ethernet/ports"),
        fail_once("GET", "/api/network/ethernet/broadcast-domains"),
        fail_once("POST", "/api/network/ethernet/broadcast-domains"),
        fail_once("POST", "/api/network/ethernet/ports"),
    ];
    world
        .mock
        .as_admin(
            Method::DELETE,
            &format!("/api/network/ethernet/ports/{foreign_port}"),
            Value::Null,
        )
        .await;
    world
        .mock
        .as_admin(
            Method::DELETE,
            &format!("/api/network/ethernet/broadcast-domains/{foreign_domain}"),
            Value::Null,
        )
        .await;
    for fault in &faults {
        poll("the fault to fire", READY_WITHIN, async || {
            (world.mock.hits(fault).await == 1).then_some(())
        })
        .await;
    }
    let svm = world.wait_ready("tn", READY_WITHIN).await;
    let svm_name = svm.status.unwrap().svm_name.unwrap();
    assert_eq!(ports(&world).await, vlan_ports(130, DOMAIN));
    assert_eq!(domain(&world, DOMAIN).await, Some(registered_ports(130)));
    assert_eq!(
        home_ports(&world, &svm_name),
        BTreeSet::from(["e0d-130".to_owned()])
    );

    // A port deleted behind the operator's back (one no LIF is homed on) is made again.
    let homed: BTreeSet<String> = world.state()["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["svm"]["name"] == svm_name.as_str())
        .map(|i| {
            i["location"]["home_node"]["name"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let free = ["node-01", "node-02"]
        .into_iter()
        .find(|n| !homed.contains(*n))
        .expect("the LIFs share a node");
    let uuid = port_uuid(&world, free, "e0d-130").await;
    world
        .mock
        .as_admin(
            Method::DELETE,
            &format!("/api/network/ethernet/ports/{uuid}"),
            Value::Null,
        )
        .await;
    poll(
        "the deleted VLAN port made again",
        READY_WITHIN,
        async || (ports(&world).await == vlan_ports(130, DOMAIN)).then_some(()),
    )
    .await;
    assert_ne!(port_uuid(&world, free, "e0d-130").await, uuid, "a new port");
    world.wait_ready("tn", READY_WITHIN).await;

    // Deleted with faults on each removal.
    let removal_faults = [
        fail_once("DELETE", "/api/network/ethernet/ports/*"),
        fail_once("DELETE", "/api/network/ethernet/broadcast-domains/*"),
    ];
    world
        .svms()
        .delete("tn", &DeleteParams::default())
        .await
        .unwrap();
    world.wait_gone("tn", READY_WITHIN).await;
    for fault in &removal_faults {
        assert_eq!(world.mock.hits(fault).await, 1, "the removal's fault fired");
    }
    assert!(ports(&world).await.is_empty(), "the VLAN ports removed");
    assert_eq!(domain(&world, DOMAIN).await, None, "the domain removed");
}

/// Ports and broadcast domains come from the cluster's inventory: a resync of Ready objects of
/// a tenant with a network costs one login each and two collection reads more per inventory
/// read, none per object. Admission refuses a grant that is not one tag per tenant, and a
/// cluster that requires a network refuses a tenant it grants none.
#[tokio::test]
async fn a_resync_of_tenant_network_svms_reads_the_network_from_the_inventory() {
    const SVMS: u8 = 3;
    let world = SvmWorld::with(
        fast_mock(),
        &["--sync-period=4s", "--ontap-inventory-min-svms=2"],
    )
    .await;
    let namespace = world.env.namespace.clone();
    for (vlans, message) in [
        (
            json!([{ "namespace": "a", "tag": 0 }]),
            "should be greater than or equal to 1",
        ),
        (
            json!([{ "namespace": "a", "tag": 4095 }]),
            "should be less than or equal to 4094",
        ),
        (
            json!([{ "namespace": "a", "tag": 5 }, { "namespace": "b", "tag": 5 }]),
            "each VLAN tag is granted once",
        ),
        (
            json!([{ "namespace": "a", "tag": 5 }, { "namespace": "a", "tag": 6 }]),
            "each namespace and each Gardener project has at most one VLAN",
        ),
        (
            json!([{ "namespace": "a", "gardenerProject": "p", "tag": 5 }]),
            "name exactly one of namespace and gardenerProject",
        ),
        (
            json!([{ "tag": 5 }]),
            "name exactly one of namespace and gardenerProject",
        ),
    ] {
        let refused = grant(&world, vlans.clone()).await.unwrap_err();
        assert!(refused.contains(message), "{vlans}: {refused}");
    }
    // Where the administrator requires a network, a tenant without one is refused.
    world
        .clusters()
        .patch(
            &world.cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "tenantNetworks": {
                "basePort": "e0d", "required": true,
                "vlans": [{ "namespace": "elsewhere", "tag": 150 }],
            } } })),
        )
        .await
        .unwrap();
    world.create_svm("unplaced", 9).await;
    let why = world
        .refused_in(
            &namespace,
            "unplaced",
            "ClusterReady",
            "NotAllowedByCluster",
        )
        .await;
    assert!(why.starts_with("spec.clusterRef: "), "{why}");
    delete_in(&world, &namespace, "unplaced").await;
    assert!(ports(&world).await.is_empty(), "nothing made for it");

    grant(&world, json!([{ "namespace": namespace, "tag": 140 }]))
        .await
        .unwrap();
    world.wait_cluster_ready(READY_WITHIN).await;
    let from = world.next_seq().await;
    for i in 0..SVMS {
        world.create_svm(&format!("resync-{i}"), i).await;
    }
    for i in 0..SVMS {
        world.wait_ready(&format!("resync-{i}"), READY_WITHIN).await;
    }
    world.operator.quiesce(READY_WITHIN).await;
    let provisioning = world
        .requests()
        .await
        .into_iter()
        .filter(|r| r["seq"].as_u64().is_some_and(|s| s >= from))
        .filter(|r| {
            r["path"]
                .as_str()
                .unwrap_or_default()
                .starts_with("/api/network/ethernet/")
        })
        .count();
    eprintln!(
        "provisioning {SVMS} SVMs of one tenant network: {provisioning} port and broadcast domain requests"
    );
    inventory_read(&world, "/api/network/ethernet/broadcast-domains").await;
    let from = world.next_seq().await;
    let window = resync_window(&world, from).await;
    // Collection reads: lookups of one object filter by name or SVM.
    let listings = |path: &str| {
        window
            .all
            .iter()
            .filter(|r| r.starts_with(&format!("GET {path}?")))
            .filter(|r| !r.contains("name=") && !r.contains("svm.uuid="))
            .count()
    };
    // A read the window cuts short may have listed the SVMs and not yet the ports: never the
    // other way round, unless ports are read outside the inventory.
    let svm_listings = listings("/api/svm/svms");
    for path in [
        "/api/network/ethernet/ports",
        "/api/network/ethernet/broadcast-domains",
    ] {
        let read = listings(path);
        assert!(
            read >= 1 && read <= svm_listings,
            "{path} read with each inventory read ({read} of {svm_listings}), never per object: {:#?}",
            window.all
        );
    }
    // Four collections: the SVMs, their interfaces, the ports and the broadcast domains.
    window.costs_a_login_per_svm(SVMS, 4);
}
