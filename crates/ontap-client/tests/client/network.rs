//! Network placement against mock-ontap: VLAN ports in a broadcast domain, interfaces placed
//! and moved by it, SVM routes read cluster-wide, and each call failed through the mock.

use ontap_client::{
    BroadcastDomainCreate, DeleteOutcome, ErrorClass, InterfaceLocation, IpInfo, IpInterfacePatch,
    ObjectRef, RouteCreate, VlanCreate,
};
use serde_json::json;
use test_support::ontap::*;

fn storage_vlan(node: &str) -> VlanCreate {
    VlanCreate {
        node: node.into(),
        base_port: "e0d".into(),
        tag: 200,
        broadcast_domain: Some("storage".into()),
    }
}

#[tokio::test]
async fn interfaces_live_on_vlan_ports_of_a_broadcast_domain() {
    let env = Env::start().await;
    let c = &env.client;
    let svm = env.create_svm("placed").await;
    let domain = c
        .create_broadcast_domain(&BroadcastDomainCreate {
            name: "storage".into(),
            mtu: 9000,
            ipspace: None,
        })
        .await
        .unwrap();
    let vlan = c.create_vlan(&storage_vlan("node-02")).await.unwrap();
    assert_eq!(vlan.name, "e0d-200");
    let dup = c.create_vlan(&storage_vlan("node-02")).await.unwrap_err();
    assert_eq!(dup.class(), ErrorClass::Conflict, "{dup}");

    let ports = c.ethernet_ports().await.unwrap();
    let listed = ports.iter().find(|p| p.uuid == vlan.uuid).unwrap();
    assert_eq!(listed.port_type.as_deref(), Some("vlan"));
    assert_eq!(listed.vlan.as_ref().unwrap().tag, 200);
    let listed_domain = listed.broadcast_domain.as_ref().unwrap();
    assert_eq!(listed_domain.uuid.as_deref(), Some(domain.uuid.as_str()));
    assert_eq!(
        c.ethernet_port("node-02", "e0d-200")
            .await
            .unwrap()
            .unwrap()
            .uuid,
        vlan.uuid
    );
    let [found] = &c
        .broadcast_domain_by_name("storage")
        .await
        .unwrap()
        .unwrap()
        .ports[..]
    else {
        panic!("one port in the domain");
    };
    assert_eq!(found.name.as_deref(), Some("e0d-200"));

    // The inventory's reads: every port and every domain in pages, the same records.
    let mut port_pages = c.port_pages(3).unwrap();
    let mut paged_ports = Vec::new();
    while let Some(page) = port_pages.next_page().await.unwrap() {
        assert!(page.len() <= 3);
        paged_ports.extend(page);
    }
    assert_eq!(paged_ports, ports, "paged as listed whole");
    let mut domain_pages = c.broadcast_domain_pages(1).unwrap();
    let mut paged_domains = Vec::new();
    while let Some(page) = domain_pages.next_page().await.unwrap() {
        assert_eq!(page.len(), 1);
        paged_domains.extend(page);
    }
    assert_eq!(paged_domains, c.broadcast_domains().await.unwrap());
    let storage = paged_domains.iter().find(|d| d.name == "storage").unwrap();
    assert_eq!(storage.ports.len(), 1, "{storage:?}");

    let data1 = c
        .create_interface_in_broadcast_domain(&lif(&svm.uuid, "data1", "10.20.0.1"), "storage")
        .await
        .unwrap();
    let placed = c
        .interface_by_name(&svm.uuid, "data1")
        .await
        .unwrap()
        .unwrap();
    let home = placed.location.unwrap();
    assert_eq!(home.home_port.unwrap().name.as_deref(), Some("e0d-200"));
    assert_eq!(home.home_node.unwrap().name.as_deref(), Some("node-02"));
    let unknown = c
        .create_interface_in_broadcast_domain(&lif(&svm.uuid, "data2", "10.20.0.2"), "nope")
        .await
        .unwrap_err();
    assert_eq!(unknown.ontap_code(), Some("1967136"), "{unknown}");
    assert_eq!(unknown.class(), ErrorClass::Invalid);

    // The port cannot go while the interface lives on it, nor the domain while it has a port.
    let busy = c.delete_port(&vlan.uuid).await.unwrap_err();
    assert_eq!(busy.class(), ErrorClass::Conflict, "{busy}");
    let full = c.delete_broadcast_domain(&domain.uuid).await.unwrap_err();
    assert_eq!(full.class(), ErrorClass::Conflict, "{full}");

    c.patch_interface(
        &data1.uuid,
        &IpInterfacePatch {
            location: Some(InterfaceLocation {
                home_node: Some(ObjectRef::by_name("node-01")),
                home_port: Some(ObjectRef::by_name("e0c")),
            }),
            service_policy: Some(ObjectRef::by_name("default-data-blocks")),
            ..IpInterfacePatch::default()
        },
    )
    .await
    .unwrap();
    let moved = c
        .interface_by_name(&svm.uuid, "data1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        moved.location.unwrap().home_port.unwrap().name.as_deref(),
        Some("e0c")
    );
    assert_eq!(
        moved.service_policy.unwrap().name.as_deref(),
        Some("default-data-blocks")
    );
    let bad_policy = c
        .patch_interface(
            &data1.uuid,
            &IpInterfacePatch {
                service_policy: Some(ObjectRef::by_name("no-such-policy")),
                ..IpInterfacePatch::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(bad_policy.ontap_code(), Some("53281065"), "{bad_policy}");

    assert_eq!(
        c.delete_port(&vlan.uuid).await.unwrap(),
        DeleteOutcome::Deleted
    );
    assert_eq!(
        c.delete_port(&vlan.uuid).await.unwrap(),
        DeleteOutcome::AlreadyAbsent
    );
    assert_eq!(
        c.delete_broadcast_domain(&domain.uuid).await.unwrap(),
        DeleteOutcome::Deleted
    );
    assert_eq!(c.broadcast_domain_by_name("storage").await.unwrap(), None);
}

#[tokio::test]
async fn routes_of_every_svm_in_one_listing() {
    let env = Env::start().await;
    let c = &env.client;
    let a = env.create_svm("route-a").await;
    let b = env.create_svm("route-b").await;
    let default_route = c
        .create_route(&RouteCreate {
            svm: ObjectRef::by_uuid(&a.uuid),
            destination: None,
            gateway: "10.30.0.1".into(),
        })
        .await
        .unwrap();
    let subnet = RouteCreate {
        svm: ObjectRef::by_uuid(&b.uuid),
        destination: Some(IpInfo {
            address: "10.40.0.0".into(),
            netmask: "16".into(),
        }),
        gateway: "10.30.1.1".into(),
    };
    c.create_route(&subnet).await.unwrap();
    let dup = c.create_route(&subnet).await.unwrap_err();
    assert_eq!(dup.class(), ErrorClass::Conflict, "{dup}");

    let of_a = c.routes(&a.uuid).await.unwrap();
    assert_eq!(of_a.len(), 1);
    assert_eq!(of_a[0].uuid, default_route.uuid);
    let destination = of_a[0].destination.as_ref().unwrap();
    assert_eq!(
        (destination.address.as_str(), destination.netmask.as_str()),
        ("0.0.0.0", "0")
    );
    assert_eq!(of_a[0].metric, Some(20));

    // Two SVMs' routes, one page of 10: one request.
    let before = env.requests("GET", "/api/network/ip/routes").await.len();
    let mut pages = c.route_pages(10).unwrap();
    let all = pages.next_page().await.unwrap().unwrap();
    assert!(pages.next_page().await.unwrap().is_none());
    assert_eq!(
        env.requests("GET", "/api/network/ip/routes").await.len(),
        before + 1
    );
    let mut owners: Vec<&str> = all
        .iter()
        .map(|r| r.svm.as_ref().unwrap().uuid.as_deref().unwrap())
        .collect();
    owners.sort_unstable();
    let mut expected = [a.uuid.as_str(), b.uuid.as_str()];
    expected.sort_unstable();
    assert_eq!(owners, expected);

    assert_eq!(
        c.delete_route(&default_route.uuid).await.unwrap(),
        DeleteOutcome::Deleted
    );
    assert!(c.routes(&a.uuid).await.unwrap().is_empty());
}

#[tokio::test]
async fn each_network_call_fails_through_the_mock_faults() {
    let env = Env::start().await;
    let c = &env.client;
    let svm = env.create_svm("net-faults").await;
    for (method, path) in [
        ("GET", "/api/network/ethernet/ports"),
        ("GET", "/api/network/ethernet/broadcast-domains"),
        ("GET", "/api/network/ip/routes"),
        ("POST", "/api/network/ethernet/ports"),
        ("POST", "/api/network/ethernet/broadcast-domains"),
        ("POST", "/api/network/ip/routes"),
        ("PATCH", "/api/network/ip/interfaces/*"),
    ] {
        env.mock.fault_json(json!({"method": method, "path": path, "times": 1,
            "action": {"type": "error", "status": 400, "code": "262197", "message": "Invalid value"}}));
    }
    assert!(c.ethernet_ports().await.is_err());
    assert!(c.broadcast_domains().await.is_err());
    assert!(c.routes(&svm.uuid).await.is_err());
    let vlan = VlanCreate {
        broadcast_domain: None,
        ..storage_vlan("node-01")
    };
    assert!(c.create_vlan(&vlan).await.is_err());
    let domain = BroadcastDomainCreate {
        name: "faulty".into(),
        mtu: 1500,
        ipspace: None,
    };
    assert!(c.create_broadcast_domain(&domain).await.is_err());
    let route = RouteCreate {
        svm: ObjectRef::by_uuid(&svm.uuid),
        destination: None,
        gateway: "10.50.0.1".into(),
    };
    assert!(c.create_route(&route).await.is_err());
    let f1 = c
        .create_interface(&lif(&svm.uuid, "f1", "10.50.0.2"))
        .await
        .unwrap();
    let patch = IpInterfacePatch {
        enabled: Some(false),
        ..IpInterfacePatch::default()
    };
    assert!(c.patch_interface(&f1.uuid, &patch).await.is_err());

    // Nothing was applied; the next attempts go through.
    assert!(
        c.ethernet_port("node-01", "e0d-200")
            .await
            .unwrap()
            .is_none()
    );
    assert!(c.routes(&svm.uuid).await.unwrap().is_empty());
    c.create_vlan(&vlan).await.unwrap();
    c.create_broadcast_domain(&domain).await.unwrap();
    c.create_route(&route).await.unwrap();
    c.patch_interface(&f1.uuid, &patch).await.unwrap();
    for (method, path) in [
        ("DELETE", "/api/network/ethernet/ports/*"),
        ("DELETE", "/api/network/ethernet/broadcast-domains/*"),
        ("DELETE", "/api/network/ip/routes/*"),
    ] {
        env.mock
            .fault_json(json!({"method": method, "path": path, "times": 1,
            "action": {"type": "error", "status": 403, "code": "6", "message": "not authorized"}}));
    }
    let port = c
        .ethernet_port("node-01", "e0d-200")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        c.delete_port(&port.uuid).await.unwrap_err().class(),
        ErrorClass::Unauthenticated
    );
    let faulty = c.broadcast_domain_by_name("faulty").await.unwrap().unwrap();
    assert!(c.delete_broadcast_domain(&faulty.uuid).await.is_err());
    let [route] = &c.routes(&svm.uuid).await.unwrap()[..] else {
        panic!("one route");
    };
    assert!(c.delete_route(&route.uuid).await.is_err());
}
