//! Network placement (issue 41): a LIF's home node and port, broadcast domain and service
//! policy, and the SVM's static routes, made in ONTAP and repaired there; names ONTAP does not
//! know become conditions naming the field; a fault during each new request is survived; and a
//! resync of objects with routes still costs one login per SVM.

use std::time::Duration;

use kube::api::{Patch, PatchParams};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::mock::fast_mock;
use crate::support::poll;
use crate::support::resync::{inventory_read, resync_window};
use crate::support::svm::SvmWorld;

const READY_WITHIN: Duration = Duration::from_secs(90);

/// Registers a fault answering the next `method` request to `path` with ONTAP's internal
/// error, once; gives its id.
fn fail_once(world: &SvmWorld, method: &str, path: &str) -> String {
    world.mock.fault_json(json!({
        "method": method, "path": path, "times": 1,
        "action": { "type": "error", "status": 500, "code": "13434889", "message": "internal error" }
    }))
}

async fn spec_patch(world: &SvmWorld, name: &str, spec: Value) {
    world
        .svms()
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({ "spec": spec })),
        )
        .await
        .unwrap();
}

async fn svm_name_of(world: &SvmWorld, name: &str) -> String {
    let svm = world.wait_ready(name, READY_WITHIN).await;
    svm.status.unwrap().svm_name.unwrap()
}

#[tokio::test]
async fn lifs_are_placed_where_the_spec_says_and_moved_in_place() {
    let world = SvmWorld::start().await;
    // A tenant's VLAN port in a broadcast domain of its own, as an administrator makes it.
    world.admin_vlan("tenant-a", "node-02", "e0d", 100).await;
    let create_fault = fail_once(&world, "POST", "/api/network/ip/interfaces");
    let object = world.svm_with(
        "placed",
        0,
        &json!({
            "managementLif": { "ip": "192.0.2.10", "prefixLength": 24, "homeNode": "node-01", "homePort": "e0d" },
            "dataLifs": [
                { "ip": "192.0.2.11", "prefixLength": 24, "homeNode": "node-02", "homePort": "e0d-100" },
                { "ip": "192.0.2.12", "prefixLength": 24, "broadcastDomain": "tenant-a", "servicePolicy": "default-data-blocks" }
            ]
        }),
    );
    world.create_manifest(object).await.unwrap();
    let svm_name = svm_name_of(&world, "placed").await;
    assert_eq!(
        world.mock.hits(&create_fault).await,
        1,
        "the create's fault fired"
    );
    let mgmt = world.interface(&svm_name, "192.0.2.10");
    assert_eq!(mgmt["location"]["home_node"]["name"], "node-01");
    assert_eq!(mgmt["location"]["home_port"]["name"], "e0d");
    assert_eq!(mgmt["service_policy"]["name"], "default-management");
    let vlan = world.interface(&svm_name, "192.0.2.11");
    assert_eq!(vlan["location"]["home_node"]["name"], "node-02");
    assert_eq!(vlan["location"]["home_port"]["name"], "e0d-100");
    assert_eq!(vlan["service_policy"]["name"], "default-data-files");
    let domain = world.interface(&svm_name, "192.0.2.12");
    assert_eq!(domain["location"]["broadcast_domain"]["name"], "tenant-a");
    assert_eq!(domain["location"]["home_port"]["name"], "e0d-100");
    assert_eq!(domain["service_policy"]["name"], "default-data-blocks");

    // Another port for the first data LIF and the default policy for the second: both changed
    // in place, through a PATCH that fails once.
    let patch = fail_once(&world, "PATCH", "/api/network/ip/interfaces/*");
    spec_patch(
        &world,
        "placed",
        json!({ "dataLifs": [
            { "ip": "192.0.2.11", "prefixLength": 24, "homeNode": "node-02", "homePort": "e0c" },
            { "ip": "192.0.2.12", "prefixLength": 24, "broadcastDomain": "tenant-a" }
        ]}),
    )
    .await;
    world.wait_ready("placed", READY_WITHIN).await;
    assert_eq!(world.mock.hits(&patch).await, 1, "the PATCH's fault fired");
    let moved = world.interface(&svm_name, "192.0.2.11");
    assert_eq!(moved["uuid"], vlan["uuid"], "moved, not replaced");
    assert_eq!(moved["location"]["home_port"]["name"], "e0c");
    let repolicied = world.interface(&svm_name, "192.0.2.12");
    assert_eq!(repolicied["uuid"], domain["uuid"], "changed, not replaced");
    assert_eq!(repolicied["service_policy"]["name"], "default-data-files");
    let patches = world
        .mock
        .requests(&[("method", "PATCH")])
        .await
        .into_iter()
        .filter(|r| {
            r["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("/api/network/ip/interfaces/"))
        })
        .count();
    assert!(patches >= 2, "each LIF changed by a PATCH: {patches}");
}

#[tokio::test]
async fn names_ontap_does_not_know_are_conditions_naming_the_field_with_ontaps_code() {
    let world = SvmWorld::start().await;
    // What admission can tell alone, it refuses.
    let mut portless = world.svm("portless", 1).json();
    portless["spec"]["dataLifs"][0]["homePort"] = json!("e0c");
    let refused = world.create_manifest(portless).await.unwrap_err();
    assert!(
        refused.contains("homePort names a port of homeNode"),
        "{refused}"
    );
    let mut host_bits = world.svm("hostbits", 1).json();
    host_bits["spec"]["routes"] =
        json!([{ "destination": "198.51.100.7/24", "gateway": "192.0.2.1" }]);
    let refused = world.create_manifest(host_bits).await.unwrap_err();
    assert!(refused.contains("must be a network address"), "{refused}");

    // What only ONTAP can tell becomes the condition, naming the field and ONTAP's code.
    let lif = |extra: Value| {
        let mut lif = json!({ "ip": "192.0.2.11", "prefixLength": 24 });
        for (key, value) in extra.as_object().unwrap() {
            lif[key] = value.clone();
        }
        json!([lif])
    };
    let object = world.svm_with(
        "misnamed",
        0,
        &json!({ "dataLifs": lif(json!({ "homeNode": "node-01", "homePort": "e9z" })) }),
    );
    world.create_manifest(object).await.unwrap();
    for (field, code, next) in [
        (
            "spec.dataLifs[0].homePort",
            "1967130",
            Some(json!({ "homeNode": "node-01", "servicePolicy": "no-such-policy" })),
        ),
        (
            "spec.dataLifs[0].servicePolicy",
            "53281065",
            Some(json!({ "broadcastDomain": "no-such-domain" })),
        ),
        ("spec.dataLifs[0].broadcastDomain", "1967136", None),
    ] {
        let message = world
            .refused_in(
                &world.env.namespace,
                "misnamed",
                "LIFsReady",
                "LIFPlacementRefused",
            )
            .await;
        assert!(
            message.starts_with(field) && message.contains(&format!("code {code}")),
            "{field}, {code}: {message}"
        );
        let (_, _, phase) = world.readiness("misnamed").await;
        assert_eq!(phase.as_deref(), Some("Failed"));
        if let Some(next) = next {
            spec_patch(&world, "misnamed", json!({ "dataLifs": lif(next) })).await;
            // The next message is waited for only once this one is gone from the condition.
            poll(
                "the condition's message to change",
                READY_WITHIN,
                async || {
                    let svm = world.svms().get("misnamed").await.ok()?;
                    let conditions = svm.status?.conditions;
                    let lifs = conditions.iter().find(|c| c.type_ == "LIFsReady")?;
                    (!lifs.message.starts_with(field)).then_some(())
                },
            )
            .await;
        }
    }
    // Named as ONTAP knows them, the LIF is made.
    spec_patch(
        &world,
        "misnamed",
        json!({ "dataLifs": lif(json!({ "broadcastDomain": "Default", "servicePolicy": "default-data-files" })) }),
    )
    .await;
    world.wait_ready("misnamed", READY_WITHIN).await;
}

#[tokio::test]
async fn routes_are_made_and_drift_is_repaired_through_faults() {
    // Short sync period: the drift made behind the operator's back is found by a periodic pass.
    let world = SvmWorld::with(fast_mock(), &["--sync-period=3s"]).await;
    let create_fault = fail_once(&world, "POST", "/api/network/ip/routes");
    let object = world.svm_with(
        "routed",
        0,
        &json!({ "routes": [
            { "gateway": "192.0.2.1" },
            { "destination": "198.51.100.0/24", "gateway": "192.0.2.254" }
        ]}),
    );
    world.create_manifest(object).await.unwrap();
    let svm_name = svm_name_of(&world, "routed").await;
    assert_eq!(
        world.mock.hits(&create_fault).await,
        1,
        "the create's fault fired"
    );
    let wanted = vec![
        "0.0.0.0/0 via 192.0.2.1".to_string(),
        "198.51.100.0/24 via 192.0.2.254".to_string(),
    ];
    assert_eq!(world.routes(&svm_name).await, wanted);

    // Behind the operator's back: a route of the spec deleted, another added.
    let listed = world
        .mock
        .as_admin(
            Method::GET,
            &format!("/api/network/ip/routes?svm.name={svm_name}&fields=uuid,destination"),
            Value::Null,
        )
        .await;
    let network = listed["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["destination"]["address"] == "198.51.100.0")
        .unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_owned();
    // The test reads routes by the same path: until the operator's read has met its fault, it
    // sends no GET of routes, and its own DELETE below is let through before the fault fires.
    let lookup = fail_once(&world, "GET", "/api/network/ip/routes");
    let delete = world.mock.fault_json(json!({
        "method": "DELETE", "path": "/api/network/ip/routes/*", "times": 1, "after": 1,
        "action": { "type": "error", "status": 500, "code": "13434889", "message": "internal error" }
    }));
    world
        .mock
        .as_admin(
            Method::DELETE,
            &format!("/api/network/ip/routes/{network}"),
            Value::Null,
        )
        .await;
    world
        .mock
        .as_admin(
            Method::POST,
            "/api/network/ip/routes",
            json!({ "svm": { "name": svm_name }, "gateway": "192.0.2.253",
                    "destination": { "address": "203.0.113.0", "netmask": "24" } }),
        )
        .await;
    poll(
        "the operator's route lookup to meet its fault",
        READY_WITHIN,
        async || (world.mock.hits(&lookup).await == 1).then_some(()),
    )
    .await;
    poll("the routes repaired", READY_WITHIN, async || {
        (world.routes(&svm_name).await == wanted).then_some(())
    })
    .await;
    assert_eq!(
        world.mock.hits(&delete).await,
        1,
        "the DELETE's fault fired"
    );
    world.wait_ready("routed", READY_WITHIN).await;

    // An empty list keeps none; no list leaves them alone.
    spec_patch(&world, "routed", json!({ "routes": [] })).await;
    poll("the routes removed", READY_WITHIN, async || {
        world.routes(&svm_name).await.is_empty().then_some(())
    })
    .await;
    world.wait_ready("routed", READY_WITHIN).await;
}

/// Routes come from the cluster's inventory as the SVMs and LIFs do: a resync of Ready objects
/// with routes costs one login each and a few collection reads, none per object.
#[tokio::test]
async fn a_resync_of_routed_svms_reads_routes_from_the_inventory() {
    const SVMS: u8 = 3;
    let world = SvmWorld::with(
        fast_mock(),
        &["--sync-period=4s", "--ontap-inventory-min-svms=2"],
    )
    .await;
    world.wait_cluster_ready(READY_WITHIN).await;
    for i in 0..SVMS {
        let object = world.svm_with(
            &format!("resync-{i}"),
            i,
            &json!({ "routes": [{ "gateway": "192.0.2.1" }] }),
        );
        world.create_manifest(object).await.unwrap();
    }
    for i in 0..SVMS {
        world.wait_ready(&format!("resync-{i}"), READY_WITHIN).await;
    }
    world.operator.quiesce(READY_WITHIN).await;
    // Measured from the first inventory read that took the routes along: passes before it read
    // per object, as they do on a cluster whose objects have not yet been counted steady.
    inventory_read(&world, "/api/network/ip/routes").await;
    let from = world.next_seq().await;
    let window = resync_window(&world, from).await;
    let route_reads = window
        .all
        .iter()
        .filter(|r| r.contains("/api/network/ip/routes"))
        .count();
    assert!(
        route_reads >= 1,
        "routes read with the inventory: {:#?}",
        window.all
    );
    // Three collections: the SVMs, their interfaces and their routes.
    window.costs_a_login_per_svm(SVMS, 3);
}
