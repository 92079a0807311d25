//! metal-stack's layout: its `TridentConfig` used verbatim, and a switch from metal-stack's
//! extension that keeps the SVM, its LIFs and the password.

use crate::support::gardener::Gardener;
use crate::support::mock::fast_mock;
use crate::support::operator::OPERATOR_NAMESPACE;
use crate::support::svm::SvmWorld;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use ontap_operator::api::{DeletionPolicy, StorageVirtualMachine, SvmMode};
use serde_json::{Value, json};

use super::gardenlet::*;

/// A shoot manifest written for metal-stack's extension, its providerConfig used verbatim: the
/// SVM and account get metal-stack's names and the shoot metal-stack's StorageClasses.
#[tokio::test]
async fn metal_stack_trident_config_works_verbatim() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    let project = "0b1f9c3e-aaaa-bbbb-cccc-123456789abc";
    create_cluster(&g, &ns, json!({"cluster.metal-stack.io/project": project})).await;
    let shoot_manifest: Value = serde_yaml::from_str(
        r#"
apiVersion: core.gardener.cloud/v1beta1
kind: Shoot
metadata:
  name: web-a
  annotations:
    cluster.metal-stack.io/project: 0b1f9c3e-aaaa-bbbb-cccc-123456789abc
spec:
  extensions:
    - type: ontap
      providerConfig:
        apiVersion: ontap.metal.extensions.gardener.cloud/v1alpha1
        kind: TridentConfig
        svmIpaddresses:
          managementLif: 192.0.2.30
          dataLifs:
            - 192.0.2.31
"#,
    )
    .unwrap();
    let config = shoot_manifest["spec"]["extensions"][0]["providerConfig"].clone();
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    let took = wait_ready(&g, &w, &ns, &ts).await;
    println!("metal-stack TridentConfig → Succeeded: {took:?}");
    let svm = "p0b1f9c3eaaaabbbbcccc123456789abc";
    assert_eq!(svms_in_ontap(&w)[0]["name"], svm);
    let shoot = ns.rsplit("--").next().unwrap();
    let (user, password) = shoot_credentials(&g, &format!("{svm}-test--{shoot}-credentials"))
        .await
        .unwrap();
    assert_eq!(
        Some(user.clone()),
        ontap_operator::extension::naming::account_name(&ns)
    );
    assert!(w.authenticates(&user, &password, svm).await);
    // The project's SVM is provisioned by an object of its own, which outlives the shoot and
    // shares the SVM with shoot namespaces; the shoot's object only makes its account on it.
    let objects = Api::<StorageVirtualMachine>::namespaced(g.seed.clone(), &ns);
    let project_object = objects
        .get(&format!("ontap-project-{project}"))
        .await
        .unwrap();
    assert_eq!(project_object.spec.mode, SvmMode::Owned);
    assert_eq!(project_object.spec.deletion_policy, DeletionPolicy::Retain);
    assert!(project_object.owner_references().is_empty());
    assert!(project_object.spec.share_with.is_some());
    let shoot_object = objects.get("ontap").await.unwrap();
    assert_eq!(shoot_object.spec.mode, SvmMode::AccountOnly);
    assert_eq!(shoot_object.spec.svm_name.as_deref(), Some(svm));
    // A write that names no field manager is recorded under the operator's User-Agent.
    let managers: Vec<&str> = shoot_object
        .managed_fields()
        .iter()
        .filter_map(|f| f.manager.as_deref())
        .collect();
    assert!(
        managers.contains(&"ontap-operator"),
        "the operator's create names it: {managers:?}"
    );
    let classes = Api::<StorageClass>::all(g.shoot.clone());
    assert!(classes.get_opt("ontap-gold").await.unwrap().is_some());
    assert!(classes.get_opt("ontap-encrypted").await.unwrap().is_some());
}

/// An installation switching from metal-stack's extension keeps the SVM, its LIFs and the
/// password ([`switch_from_metal_stack`]). A tenant's own object asking for an unmarked SVM the
/// same way is refused with `AdoptionNotAllowed`.
#[tokio::test]
async fn switching_from_metal_stack_keeps_the_svm_its_lifs_and_the_password() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    let project = "5d7e9a1b-2c3d-4e5f-8a9b-0c1d2e3f4a5b";
    switch_from_metal_stack(&g, &w, project, ["192.0.2.50", "192.0.2.51"], false, false).await;

    // A tenant asking the same for an unmarked SVM of its own choosing: refused, ONTAP untouched.
    let tenant = SvmWorld::with(
        fast_mock(),
        &[
            "--extension-type=ontap",
            &format!("--extension-project-namespace={ns}"),
            &format!("--heartbeat-namespace={OPERATOR_NAMESPACE}"),
        ],
    )
    .await;
    let foreign = "p00000000000000000000000000000001";
    let foreign_uuid =
        metal_stack_svm(&tenant, foreign, ["192.0.2.60", "192.0.2.61"], None, false).await;
    let mut grab = tenant.svm("grab", 0).json();
    grab["spec"]["svmName"] = json!(foreign);
    grab["metadata"]["annotations"] =
        json!({ontap_operator::api::ADOPT_SVM_UUID_ANNOTATION: foreign_uuid});
    tenant
        .svms()
        .create(
            &PostParams::default(),
            &serde_json::from_value(grab).unwrap(),
        )
        .await
        .unwrap();
    tenant
        .wait_condition("grab", "SVMReady", "False", TIMEOUT)
        .await;
    let status = tenant.svms().get("grab").await.unwrap().status.unwrap();
    let refused = status
        .conditions
        .iter()
        .find(|c| c.type_ == "SVMReady")
        .unwrap();
    assert_eq!(refused.reason, "AdoptionNotAllowed", "{refused:?}");
    assert!(refused.message.contains(foreign), "{}", refused.message);
    assert_eq!(status.phase, Some(ontap_operator::api::SvmPhase::Failed));
    let untouched = ontap_svm(&tenant, foreign).unwrap();
    assert_eq!(untouched["comment"].as_str().unwrap_or_default(), "");
    assert_eq!(interfaces_of(&tenant, &foreign_uuid).len(), 2);
}

/// On a cluster routing with BGP metal-stack's extension made /32 VIP LIFs; the project object
/// asks for them in that form, so the switch keeps them (replacing them would cut every shoot of
/// the project off its volumes).
#[tokio::test]
async fn switching_from_metal_stack_on_a_bgp_cluster_keeps_its_vip_lifs() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    w.mock
        .as_admin(
            reqwest::Method::POST,
            "/api/network/ip/bgp/peer-groups",
            json!({"name": "tor1", "ipspace": {"name": "Default"},
                   "local": {"interface": {"name": "bgp1"}, "ip": {"address": "198.51.100.10", "netmask": "24"},
                             "port": {"name": "e0c", "node": {"name": "node-01"}}},
                   "peer": {"address": "198.51.100.1", "asn": 65000}}),
        )
        .await;
    let project = "7a1c3e5f-0b2d-4f6a-8c9e-1d3f5a7b9c0e";
    let object =
        switch_from_metal_stack(&g, &w, project, ["192.0.2.80", "192.0.2.81"], true, false).await;
    let spec = object.spec;
    for lif in std::iter::once(&spec.management_lif).chain(&spec.data_lifs) {
        assert!(lif.vip && lif.prefix_length == 32, "{lif:?}");
    }
}

/// metal-stack's Secret holds a password ONTAP no longer takes (it drifted, or was rotated by
/// hand): nothing is imported, and the account gets a new password Secret-first, delivered to the
/// shoot; the old one stops working.
#[tokio::test]
async fn switching_from_metal_stack_with_a_stale_secret_rotates_the_password() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let project = "3e5a7c9d-1f2b-4c6d-8e0f-2a4b6c8d0e1f";
    switch_from_metal_stack(&g, &w, project, ["192.0.2.90", "192.0.2.91"], false, true).await;
}
