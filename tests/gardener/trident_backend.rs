//! What the shoot's Trident gets: the TridentBackendConfigs and Secret read from the shoot
//! (delivered by the real resource manager), their shape per protocol and ONTAP version, and
//! Trident's initialization of them replayed against mock ONTAP as the delivered account
//! (`trident_replay`, derived from Trident's driver).

use crate::support::gardener::Gardener;
use crate::support::mock::fast_mock;
use crate::support::svm::SvmWorld;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use ontap_operator::extension::api::ErrorCode;
use serde_json::{Value, json};

use super::gardenlet::*;
use super::trident_replay::{Driver, Trident};

/// The world of one shoot on an ONTAP of `version`.
async fn world_on(g: &Gardener, version: &str) -> SvmWorld {
    let mut mock = fast_mock();
    mock.cluster.version = version.into();
    let args = operator_args(&g.namespace);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let w = SvmWorld::with(mock, &args).await;
    bind_extension_rules(&w.env.client).await;
    w
}

/// The one TridentBackendConfig in the shoot and the credentials of the Secret it names.
async fn delivered_backend(g: &Gardener) -> (Value, String, String) {
    let backends = backend_configs(g).list(&Default::default()).await.unwrap();
    assert_eq!(backends.items.len(), 1, "one backend per protocol");
    let spec = backends.items[0].data["spec"].clone();
    let secret_name = spec["credentials"]["name"].as_str().unwrap();
    let secret = Api::<Secret>::namespaced(g.shoot.clone(), "kube-system")
        .get(secret_name)
        .await
        .unwrap();
    let data = secret.data.unwrap();
    let text = |k: &str| String::from_utf8(data[k].0.clone()).unwrap();
    (spec, text("username"), text("password"))
}

/// Trident's initialization against the delivered account, as `trident_replay` derives it from
/// Trident's driver: the SVM it derives from the account, and the data LIFs it finds for the
/// driver's protocol.
async fn trident_initializes(
    w: &SvmWorld,
    user: &str,
    password: &str,
    driver: Driver,
) -> (String, Vec<String>) {
    let trident = Trident::connect(w, user, password).await;
    trident.initialize(driver).await;
    (trident.svm.clone(), trident.data_lifs(driver).await)
}

/// The applications ONTAP holds for the account `user`.
fn applications_of(w: &SvmWorld, user: &str) -> Vec<String> {
    let accounts = w.state()["accounts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let account = accounts
        .iter()
        .find(|a| a["name"] == user)
        .unwrap_or_else(|| panic!("no account {user}: {accounts:#?}"));
    let mut apps: Vec<String> = account["applications"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| {
            a["authentication_methods"]
                .as_array()
                .is_some_and(|m| m.contains(&json!("password")))
        })
        .map(|a| a["application"].as_str().unwrap().to_owned())
        .collect();
    apps.sort();
    apps
}

/// ONTAP 9.16.1 (REST by Trident's default; we write `useREST: true` anyway): an NFS shoot gets
/// a mountable backend, Trident's own export policy admitting the shoot's node network, and an
/// account with `http` only.
#[tokio::test]
async fn nfs_backend_on_a_rest_cluster_is_what_trident_needs() {
    let g = Gardener::start().await;
    let w = world_on(&g, "9.16.1").await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let config = json!({
        "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
        "cluster": w.cluster,
        "svm": {"managementLif": {"ip": "192.0.2.50", "prefixLength": 24},
                "dataLifs": [{"ip": "192.0.2.51", "prefixLength": 24}], "protocols": ["nfs"]}
    });
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;

    let (spec, user, password) = delivered_backend(&g).await;
    assert_eq!(spec["storageDriverName"], "ontap-nas");
    assert_eq!(spec["nasType"], "nfs");
    assert_eq!(spec["managementLIF"], "192.0.2.50");
    assert_eq!(spec["useREST"], true);
    assert_eq!(spec["autoExportPolicy"], true, "mounts need rules: {spec}");
    assert_eq!(spec["autoExportCIDRs"], json!([NODE_NETWORK]));
    let (svm, _) = trident_initializes(&w, &user, &password, Driver::Nas).await;
    assert!(ontap_svm(&w, &svm).is_some(), "{svm}");
    assert_eq!(
        applications_of(&w, &user),
        ["http"],
        "no ZAPI on a REST cluster"
    );
}

/// ONTAP 9.11.1: Trident speaks ZAPI whatever the backend says. The backend does not ask for
/// REST (Trident refuses `useREST: true` there) and the account gets `ontapi`.
#[tokio::test]
async fn iscsi_backend_on_a_zapi_cluster_gets_an_ontapi_account() {
    let g = Gardener::start().await;
    let w = world_on(&g, "9.11.1").await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let config = json!({
        "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
        "cluster": w.cluster,
        "svm": {"managementLif": {"ip": "192.0.2.60", "prefixLength": 24},
                "dataLifs": [{"ip": "192.0.2.61", "prefixLength": 24}], "protocols": ["iscsi"]}
    });
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;

    let (spec, user, password) = delivered_backend(&g).await;
    assert_eq!(spec["storageDriverName"], "ontap-san");
    assert_eq!(spec["sanType"], "iscsi");
    assert!(spec.get("useREST").is_none(), "ZAPI below 9.12.1: {spec}");
    // Trident's REST prelude (version, SVM from the account); then it speaks ZAPI, which mock
    // ONTAP does not serve: what follows is unverified here (trident_calls.md, Part G).
    let trident = Trident::connect(&w, &user, &password).await;
    assert!(ontap_svm(&w, &trident.svm).is_some());
    assert_eq!(applications_of(&w, &user), ["http", "ontapi"]);
}

/// NVMe is refused where no Trident can provision on it, with a configuration error naming the
/// reason, and nothing is delivered: on 9.9.1 ONTAP has no NVMe/TCP; on 9.11.1 Trident must
/// speak ZAPI, whose driver has no NVMe operation.
async fn nvme_is_refused_on(version: &str, reason: &str) {
    let g = Gardener::start().await;
    let w = world_on(&g, version).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let config = json!({
        "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
        "cluster": w.cluster,
        "svm": {"managementLif": {"ip": "192.0.2.70", "prefixLength": 24},
                "dataLifs": [{"ip": "192.0.2.71", "prefixLength": 24}], "protocols": ["nvme"]}
    });
    create_extension(&g, &ns, config, "reconcile").await;
    let refusal = configuration_refused(&g, &w, &ns).await;
    assert!(refusal.contains(reason), "{refusal}");
}

/// Waits for the Extension's configuration to be refused and gives the refusal, once it is
/// clear nothing was delivered.
async fn configuration_refused(g: &Gardener, w: &SvmWorld, ns: &str) -> String {
    wait_error_code(g, w, ns, ErrorCode::ConfigurationProblem).await;
    let ext = extensions(g, ns).get("ontap").await.unwrap();
    assert!(
        backend_configs(g)
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "nothing delivered"
    );
    ext.status.unwrap().last_error.unwrap().description
}

/// A shoot with NVMe, iSCSI and NFS on one SVM: refused while a data LIF names no protocol (no
/// backend is delivered that Trident's driver would refuse for want of LIFs), then, with a data
/// LIF per protocol, each of the three backends finds its LIFs by `services=` as Trident does.
#[tokio::test]
async fn each_protocol_of_a_three_protocol_shoot_has_data_lifs_trident_finds() {
    let g = Gardener::start().await;
    let w = world_on(&g, "9.16.1").await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let config = |data_lifs: Value| {
        json!({
            "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
            "cluster": w.cluster,
            "svm": {"managementLif": {"ip": "192.0.2.80", "prefixLength": 24},
                    "dataLifs": data_lifs, "protocols": ["nvme", "iscsi", "nfs"]}
        })
    };
    create_extension(
        &g,
        &ns,
        config(json!([{"ip": "192.0.2.81", "prefixLength": 24}])),
        "reconcile",
    )
    .await;
    let refusal = configuration_refused(&g, &w, &ns).await;
    assert!(
        refusal.contains(
            "providerConfig.svm.dataLifs[0].protocols: required when the SVM enables more than one protocol"
        ),
        "{refusal}"
    );
    assert!(svms_in_ontap(&w).is_empty(), "no SVM for a refused shoot");

    let lifs = json!([
        {"ip": "192.0.2.81", "prefixLength": 24, "protocols": ["nvme"]},
        {"ip": "192.0.2.82", "prefixLength": 24, "protocols": ["iscsi"]},
        {"ip": "192.0.2.83", "prefixLength": 24, "protocols": ["nfs"]},
    ]);
    extensions(&g, &ns)
        .patch(
            "ontap",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"providerConfig": config(lifs)}})),
        )
        .await
        .unwrap();
    let ts = request(&g, &ns, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;

    let backends = backend_configs(&g).list(&Default::default()).await.unwrap();
    let mut drivers: Vec<(String, String)> = backends
        .items
        .iter()
        .map(|b| {
            let spec = &b.data["spec"];
            let kind = spec["sanType"].as_str().or(spec["nasType"].as_str());
            (
                spec["storageDriverName"].as_str().unwrap().to_owned(),
                kind.unwrap().to_owned(),
            )
        })
        .collect();
    drivers.sort();
    assert_eq!(
        drivers,
        [
            ("ontap-nas".to_owned(), "nfs".to_owned()),
            ("ontap-san".to_owned(), "iscsi".to_owned()),
            ("ontap-san".to_owned(), "nvme".to_owned()),
        ]
    );
    let secret = backends.items[0].data["spec"]["credentials"]["name"]
        .as_str()
        .unwrap();
    let (user, password) = shoot_credentials(&g, secret).await.unwrap();
    for (driver, address) in [
        (Driver::Nvme, "192.0.2.81"),
        (Driver::Iscsi, "192.0.2.82"),
        (Driver::Nas, "192.0.2.83"),
    ] {
        let (_, addresses) = trident_initializes(&w, &user, &password, driver).await;
        assert_eq!(addresses, [address], "{driver:?} is served by its own LIF");
    }
}

#[tokio::test]
async fn nvme_on_a_cluster_without_nvme_tcp_is_refused() {
    nvme_is_refused_on("9.9.1", "has no NVMe/TCP").await;
}

#[tokio::test]
async fn nvme_where_trident_must_speak_zapi_is_refused() {
    nvme_is_refused_on("9.11.1", "implements no NVMe operation").await;
}

/// Least privilege (`svm.accountRole: Trident`): the shoot's account holds the operator's REST
/// role with exactly NetApp's privileges for an SVM-scoped Trident user, and Trident's
/// initialization, AddBackend, state poll and a volume's whole life succeed with it for each
/// protocol, as the replay derives them from Trident's driver. None of them reads
/// `/api/protocols/nvme/services`, which the role does not grant: Trident's NVMe `Initialize`
/// decides NVMe support from the cluster version and finds its LIFs by their services.
#[tokio::test]
async fn every_protocol_works_with_netapps_trident_role() {
    let g = Gardener::start().await;
    let w = world_on(&g, "9.16.1").await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let config = json!({
        "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
        "cluster": w.cluster,
        "svm": {"managementLif": {"ip": "192.0.2.100", "prefixLength": 24},
                "dataLifs": [
                    {"ip": "192.0.2.101", "prefixLength": 24, "protocols": ["nvme"]},
                    {"ip": "192.0.2.102", "prefixLength": 24, "protocols": ["iscsi"]},
                    {"ip": "192.0.2.103", "prefixLength": 24, "protocols": ["nfs"]}],
                "protocols": ["nvme", "iscsi", "nfs"],
                "accountRole": "Trident"}
    });
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;

    let backends = backend_configs(&g).list(&Default::default()).await.unwrap();
    assert_eq!(backends.items.len(), 3, "one backend per protocol");
    let secret = backends.items[0].data["spec"]["credentials"]["name"]
        .as_str()
        .unwrap();
    let (user, password) = shoot_credentials(&g, secret).await.unwrap();
    let accounts = w.state()["accounts"].as_array().cloned().unwrap();
    let account = accounts
        .iter()
        .find(|a| a["name"] == user.as_str())
        .unwrap();
    assert_eq!(
        account["role"]["name"],
        ontap_operator::ontap::svm::role::TRIDENT_ROLE
    );
    for driver in [Driver::Nvme, Driver::Iscsi, Driver::Nas] {
        let trident = Trident::connect(&w, &user, &password).await;
        trident.whole_life(driver).await;
        let sent = trident.sent.borrow();
        assert!(
            !sent
                .iter()
                .any(|r| r.contains("/api/protocols/nvme/services")),
            "{driver:?}: {sent:#?}"
        );
    }
    // What the role does not grant stays refused: the account cannot read the SVM's accounts.
    let denied = w
        .mock
        .http
        .get(w.mock.url("/api/security/accounts"))
        .basic_auth(&user, Some(&password))
        .send()
        .await
        .unwrap();
    assert_eq!(denied.status().as_u16(), 403);
}
