//! Attacks a shoot owner mounts through the Shoot (its annotations, its providerConfig): the
//! test writes the Shoot as gardenlet copies it into the `Cluster`, and the providerConfig as it
//! reaches the Extension. The victim is another Gardener project's metal-stack project (or an
//! SVM nobody marked); each test asserts that the victim's credentials still authenticate and
//! that nothing of theirs changed in ONTAP.

use crate::support::gardener::Gardener;
use crate::support::svm::SvmWorld;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use ontap_operator::api::StorageVirtualMachine;
use ontap_operator::extension::api::{Cluster, ErrorCode, GARDENER_PROJECT_ANNOTATION};
use ontap_operator::extension::naming;
use serde_json::{Value, json};

#[path = "../gardener/gardenlet.rs"]
#[allow(dead_code)]
mod gardenlet;

use gardenlet::*;

/// The attacker's Shoot as gardenlet copies it: in the Gardener project namespace
/// `garden-test`, with the annotations (and provider-metal's `infrastructureConfig.projectID`)
/// its owner wrote.
async fn attacker_cluster(g: &Gardener, metal_project: &str, infrastructure_project: Option<&str>) {
    let mut shoot = json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
        "metadata": {"name": "web-a", "namespace": "garden-test",
                     "annotations": {"cluster.metal-stack.io/project": metal_project}},
        "status": {"lastOperation": {"type": "Reconcile", "state": "Succeeded"}}
    });
    if let Some(id) = infrastructure_project {
        shoot["spec"] = json!({"provider": {"type": "metal", "infrastructureConfig": {
            "apiVersion": "metal.provider.extensions.gardener.cloud/v1alpha1",
            "kind": "InfrastructureConfig", "projectID": id, "partitionID": "p1"
        }}});
    }
    let cluster: Cluster = serde_json::from_value(json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "Cluster",
        "metadata": {"name": g.namespace},
        "spec": {
            "cloudProfile": {"apiVersion": "core.gardener.cloud/v1beta1", "kind": "CloudProfile"},
            "seed": {"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed"},
            "shoot": shoot
        }
    }))
    .unwrap();
    Api::<Cluster>::all(g.seed.clone())
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
}

/// metal-stack's providerConfig, as the attacker writes it: the victim's LIF addresses.
fn trident_config(lifs: [&str; 2]) -> Value {
    json!({
        "apiVersion": "ontap.metal.extensions.gardener.cloud/v1alpha1", "kind": "TridentConfig",
        "svmIpaddresses": {"managementLif": lifs[0], "dataLifs": [lifs[1]]},
    })
}

/// The victim's metal-stack project on this seed, as the extension left it for their shoots:
/// the project object (bound to `garden-victim` unless `bound` is false: declared by an earlier
/// release) provisioning the SVM, and one victim shoot's account on it. Returns the victim's
/// SVM name and password.
async fn victim_project(
    g: &Gardener,
    w: &SvmWorld,
    project: &str,
    lifs: [&str; 2],
    bound: bool,
) -> (String, String) {
    let ns = &g.namespace;
    let svm = naming::project_svm_name(project);
    let objects = Api::<StorageVirtualMachine>::namespaced(g.seed.clone(), ns);
    let lif = |ip: &str| json!({"ip": ip, "prefixLength": 24});
    let mut provider = json!({
        "apiVersion": "ontap.storage.dev/v1alpha1", "kind": "StorageVirtualMachine",
        "metadata": {"name": naming::project_object_name(project).unwrap(), "namespace": ns},
        "spec": {
            "clusterRef": {"name": w.cluster}, "svmName": svm, "protocols": {"nfs": true},
            "managementLif": lif(lifs[0]), "dataLifs": [lif(lifs[1])],
            "deletionPolicy": "Delete",
            "shareWith": {"matchLabels": {"extensions.gardener.cloud/ontap": "true"}}
        }
    });
    if bound {
        provider["metadata"]["annotations"] = json!({GARDENER_PROJECT_ANNOTATION: "garden-victim"});
    }
    let account = json!({
        "apiVersion": "ontap.storage.dev/v1alpha1", "kind": "StorageVirtualMachine",
        "metadata": {"name": "victim-shoot", "namespace": ns},
        "spec": {
            "mode": "AccountOnly", "clusterRef": {"name": w.cluster}, "svmName": svm,
            "managementLif": lif(lifs[0]), "dataLifs": [lif(lifs[1])],
            "protocols": {"nfs": true},
            "account": {"name": "victimweb"}, "secretName": "victim-shoot-credentials",
            "provider": {"name": naming::project_object_name(project).unwrap()}
        }
    });
    for object in [provider, account] {
        objects
            .create(
                &PostParams::default(),
                &serde_json::from_value(object).unwrap(),
            )
            .await
            .unwrap();
    }
    poll_svm_ready(w, &objects, &naming::project_object_name(project).unwrap()).await;
    poll_svm_ready(w, &objects, "victim-shoot").await;
    let secret = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(g.seed.clone(), ns)
        .get("victim-shoot-credentials")
        .await
        .unwrap();
    let password = String::from_utf8(secret.data.unwrap()["password"].0.clone()).unwrap();
    assert!(w.authenticates("victimweb", &password, &svm).await);
    (svm, password)
}

/// A shoot naming another Gardener project's metal-stack project: refused with
/// ERR_CONFIGURATION_PROBLEM (the project object is bound to the victim's Gardener project),
/// no account for it on the victim's SVM; deleting the refused shoot does not take the victim's
/// project object with it.
#[tokio::test]
async fn a_shoot_naming_another_projects_metal_project_gets_no_account_on_its_svm() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    let project = "6c2e4a8b-0d1f-4a3b-8c5d-7e9f1a3b5c7d";
    let lifs = ["192.0.2.160", "192.0.2.161"];
    let (svm, password) = victim_project(&g, &w, project, lifs, true).await;
    let before = w.holdings(&svm);

    attacker_cluster(&g, project, None).await;
    create_extension(&g, &ns, trident_config(lifs), "reconcile").await;
    wait_error_code(&g, &w, &ns, ErrorCode::ConfigurationProblem).await;
    let ext = extensions(&g, &ns).get("ontap").await.unwrap();
    let error = ext.status.unwrap().last_error.unwrap();
    assert!(
        error.description.contains("another Gardener project")
            && !error.description.contains("garden-victim"),
        "says why, without naming the victim: {}",
        error.description
    );
    w.operator.quiesce(TIMEOUT).await;
    assert!(w.authenticates("victimweb", &password, &svm).await);
    assert_eq!(w.holdings(&svm), before, "nothing of the victim's changed");

    let gc = garbage_collector_stand_in(g.shoot.clone());
    delete_as_gardenlet(&g, &w, &ns).await;
    gc.abort();
    w.operator.quiesce(TIMEOUT).await;
    let provider = Api::<StorageVirtualMachine>::namespaced(g.seed.clone(), &ns)
        .get(&naming::project_object_name(project).unwrap())
        .await
        .unwrap();
    assert!(
        provider.metadata.deletion_timestamp.is_none(),
        "the victim's project object stays"
    );
    assert!(w.authenticates("victimweb", &password, &svm).await);
    assert_eq!(w.holdings(&svm), before, "nothing of the victim's changed");
}

/// A shoot naming the metal-stack project `rod`: an unmarked SVM `prod` (someone's, made by
/// hand or by metal-stack's extension) is not adopted because of it: its protocols, LIFs and
/// accounts stay, and no account of the shoot's lands on it. `rod` is no metal-stack project id,
/// so the shoot is refused before any object is declared; adoption is an administrator's act.
#[tokio::test]
async fn a_shoot_naming_rod_does_not_adopt_an_unmarked_svm_prod() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    w.mock
        .as_admin(
            reqwest::Method::POST,
            "/api/svm/svms",
            json!({"name": "prod", "nfs": {"enabled": true}, "iscsi": {"enabled": true}}),
        )
        .await;
    wait_for(&w, "prod runs", async || {
        ontap_svm(&w, "prod")
            .filter(|s| s["state"] == "running")
            .map(|_| ())
    })
    .await;
    for (name, ip) in [("mgmt", "192.0.2.170"), ("data", "192.0.2.171")] {
        w.mock
            .as_admin(
                reqwest::Method::POST,
                "/api/network/ip/interfaces",
                json!({"name": name, "svm": {"name": "prod"},
                       "ip": {"address": ip, "netmask": "24"},
                       "location": {"home_node": {"name": "node-01"}}}),
            )
            .await;
    }
    let password = "Pr0dPassw0rd";
    w.mock
        .as_admin(
            reqwest::Method::POST,
            "/api/security/accounts",
            json!({"name": "produser", "owner": {"name": "prod"}, "role": {"name": "vsadmin"},
                   "applications": [{"application": "http", "authentication_methods": ["password"]}],
                   "password": password}),
        )
        .await;
    assert!(w.authenticates("produser", password, "prod").await);
    let before = w.holdings("prod");

    attacker_cluster(&g, "rod", None).await;
    create_extension(
        &g,
        &ns,
        trident_config(["192.0.2.172", "192.0.2.173"]),
        "reconcile",
    )
    .await;
    // `rod` is no metal-stack project id: no project object is declared for it at all.
    wait_error_code(&g, &w, &ns, ErrorCode::ConfigurationProblem).await;
    w.operator.quiesce(TIMEOUT).await;
    assert!(
        Api::<StorageVirtualMachine>::namespaced(g.seed.clone(), &ns)
            .get_opt("ontap-project-rod")
            .await
            .unwrap()
            .is_none(),
        "no project object for a name that is not metal-stack's"
    );
    assert!(w.authenticates("produser", password, "prod").await);
    assert_eq!(w.holdings("prod"), before, "nothing of prod's changed");
    let ext = extensions(&g, &ns).get("ontap").await.unwrap();
    assert!(
        ontap_operator::extension::status::ready_for_gardenlet(&ext, None).is_err(),
        "the shoot got nothing"
    );
}

/// A shoot whose annotation names another project than provider-metal's immutable
/// `infrastructureConfig.projectID`: refused, even where the victim's project object predates
/// bindings (so the first shoot seen would otherwise bind it).
#[tokio::test]
async fn a_shoot_whose_annotation_disagrees_with_its_infrastructure_project_is_refused() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    let project = "2a4c6e8a-9b1d-4f3a-8b5c-6d8e0f2a4b6c";
    let lifs = ["192.0.2.180", "192.0.2.181"];
    let (svm, password) = victim_project(&g, &w, project, lifs, false).await;
    let before = w.holdings(&svm);

    attacker_cluster(&g, project, Some("0f0f0f0f-1111-4222-8333-444455556666")).await;
    create_extension(&g, &ns, trident_config(lifs), "reconcile").await;
    wait_error_code(&g, &w, &ns, ErrorCode::ConfigurationProblem).await;
    w.operator.quiesce(TIMEOUT).await;
    assert!(w.authenticates("victimweb", &password, &svm).await);
    assert_eq!(w.holdings(&svm), before, "nothing of the victim's changed");
    let provider = Api::<StorageVirtualMachine>::namespaced(g.seed.clone(), &ns)
        .get(&naming::project_object_name(project).unwrap())
        .await
        .unwrap();
    assert!(
        !provider
            .annotations()
            .contains_key(GARDENER_PROJECT_ANNOTATION),
        "not bound to the attacker's Gardener project"
    );
}

/// Issue 38, attack 2: another seed's project object, serving Gardener project `garden-victim`,
/// made a metal-stack project's SVM, and ONTAP's mark says so. A shoot of `garden-test` names that
/// metal-stack project on this seed, where no project object for it exists yet: the one declared
/// here is bound to `garden-test`, so it neither stands in for the SVM nor takes it over, and the
/// shoot gets no account on it. (Fix switched off — a project object standing in for any SVM
/// marked for an object it cannot see — the shoot gets vsadmin on the victim's SVM.)
#[tokio::test]
async fn a_shoot_gets_no_account_on_another_seeds_svm_of_another_gardener_project() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    let project = "9d1f3a5c-7e9b-4d2f-8a4c-6e8f0a2c4e6a";
    let svm = naming::project_svm_name(project);
    let mark = format!(
        "ontap-operator:uid=0f0e0d0c-0000-4000-8000-000000000001 project=garden-victim StorageVirtualMachine garden/{}",
        naming::project_object_name(project).unwrap()
    );
    w.mock
        .as_admin(
            reqwest::Method::POST,
            "/api/svm/svms",
            json!({"name": svm, "nfs": {"enabled": true}, "comment": mark}),
        )
        .await;
    wait_for(&w, "the victim's SVM runs", async || {
        ontap_svm(&w, &svm)
            .filter(|s| s["state"] == "running")
            .map(|_| ())
    })
    .await;
    let password = "V1ct1mPassw0rd";
    w.mock
        .as_admin(
            reqwest::Method::POST,
            "/api/security/accounts",
            json!({"name": "victimweb", "owner": {"name": svm}, "role": {"name": "vsadmin"},
                   "applications": [{"application": "http", "authentication_methods": ["password"]}],
                   "password": password, "comment": "ontap-operator:uid=0f0e0d0c-0000-4000-8000-000000000002"}),
        )
        .await;
    assert!(w.authenticates("victimweb", password, &svm).await);
    let before = w.holdings(&svm);

    attacker_cluster(&g, project, None).await;
    create_extension(
        &g,
        &ns,
        trident_config(["192.0.2.190", "192.0.2.191"]),
        "reconcile",
    )
    .await;
    let object = naming::project_object_name(project).unwrap();
    wait_for(&w, "the project object refuses the SVM", async || {
        failing_svms(&g.seed, &ns)
            .await
            .iter()
            .any(|f| f.contains(&object))
            .then_some(())
    })
    .await;
    w.operator.quiesce(TIMEOUT).await;
    assert!(w.authenticates("victimweb", password, &svm).await);
    assert_eq!(w.holdings(&svm), before, "nothing of the victim's changed");
    let ext = extensions(&g, &ns).get("ontap").await.unwrap();
    assert!(
        ontap_operator::extension::status::ready_for_gardenlet(&ext, None).is_err(),
        "the shoot got nothing"
    );
}
