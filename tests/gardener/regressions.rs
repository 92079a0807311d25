//! Issue 22, the Extension's side: a metal-stack shoot's account goes with it, one rejected probe
//! does not fail a shoot for good, a project SVM goes after its shoots migrated away, and a
//! migration is `Succeeded` only once its finalizers are gone.

use std::time::{Duration, Instant};

use crate::support::gardener::Gardener;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use ontap_operator::api::StorageVirtualMachine;
use ontap_operator::extension::api::{ErrorCode, LastOperationState, LastOperationType};
use ontap_operator::extension::naming;
use serde_json::json;

use super::gardenlet::*;

/// Item 3: deleting a `TridentConfig` shoot deletes its account on the project's SVM (the
/// TridentConfig's `Retain` is the project SVM's, not the account's); the SVM stays.
#[tokio::test]
async fn deleting_a_metal_stack_shoot_deletes_its_account() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    let project = "4b6d8f0a-1c3e-4a5b-9c7d-2e4f6a8b0c1d";
    create_cluster(&g, &ns, json!({"cluster.metal-stack.io/project": project})).await;
    let config = json!({
        "apiVersion": "ontap.metal.extensions.gardener.cloud/v1alpha1", "kind": "TridentConfig",
        "svmIpaddresses": {"managementLif": "192.0.2.120", "dataLifs": ["192.0.2.121"]},
    });
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;
    let svm = naming::project_svm_name(project);
    let secret = naming::credentials_secret_name(&svm, &ns).unwrap();
    let (user, password) = shoot_credentials(&g, &secret).await.unwrap();
    assert!(w.authenticates(&user, &password, &svm).await);

    let gc = garbage_collector_stand_in(g.shoot.clone());
    delete_as_gardenlet(&g, &w, &ns).await;
    gc.abort();
    assert!(
        !w.authenticates(&user, &password, &svm).await,
        "the deleted shoot's password no longer works"
    );
    let accounts = w.state()["accounts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        !accounts.iter().any(|a| a["name"] == user.as_str()),
        "the shoot's account is gone: {accounts:#?}"
    );
    assert!(
        ontap_svm(&w, &svm).is_some(),
        "the project's SVM is retained, as metal-stack keeps it"
    );
}

/// Item 5: the OntapCluster's probe rejected twice (a passing fault) while an Extension is
/// mid-operation: the Extension reports a retryable code, never ERR_INFRA_UNAUTHENTICATED (on
/// which gardenlet fails the shoot for good), and succeeds once the probe passes again.
#[tokio::test]
async fn a_passing_rejection_is_not_err_infra_unauthenticated() {
    let g = Gardener::start().await;
    // The probe retries a rejection after the engine's backoff: a base as long as its maximum
    // keeps the OntapCluster rejected for two whole backoffs, so the Extension's pass surely
    // falls inside the rejection however slow the machine, instead of racing a retry that
    // would pass a second later.
    let w = world_with_env(&g, &[("ONTAP_OPERATOR_BACKOFF_BASE", "5s")]).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let config = nfs_config(&w.cluster, "192.0.2.130", "192.0.2.131");
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;

    w.mock
        .state()
        .add_fault(
            serde_json::from_value(json!({
                "method": "GET", "path": "/api/cluster", "times": 2,
                "action": {"type": "error", "status": 401, "code": "6",
                           "message": "not authorized for that command"}
            }))
            .unwrap(),
        )
        .unwrap();
    // The next probe (every 30 s) is rejected; the Extension is asked to reconcile then.
    wait_for(&w, "the OntapCluster reports the rejection", async || {
        let cluster = w.clusters().get(&w.cluster).await.ok()?;
        cluster
            .status?
            .conditions
            .iter()
            .any(|c| c.type_ == "Connected" && c.status == "False" && c.reason == "Unauthenticated")
            .then_some(())
    })
    .await;
    let ts = request(&g, &ns, "reconcile").await;
    // Every look on the way also checks that the shoot is never failed.
    let extension = async || {
        let ext = extensions(&g, &ns).get("ontap").await.ok()?;
        let status = ext.status.clone().unwrap_or_default();
        let codes: Vec<ErrorCode> = status
            .last_error
            .iter()
            .flat_map(|e| e.codes.clone())
            .chain(status.conditions.iter().flat_map(|c| c.codes.clone()))
            .collect();
        assert!(
            !codes.contains(&ErrorCode::InfraUnauthenticated),
            "one passing rejection must not fail the shoot: {status:#?}"
        );
        Some((ext, codes))
    };
    wait_for(&w, "the Extension reports a retryable code", async || {
        let (_, codes) = extension().await?;
        codes
            .contains(&ErrorCode::RetryableInfraDependencies)
            .then_some(())
    })
    .await;
    wait_for(&w, "the Extension Succeeded again", async || {
        let (ext, _) = extension().await?;
        ontap_operator::extension::status::ready_for_gardenlet(&ext, Some(&ts))
            .is_ok()
            .then_some(())
    })
    .await;
}

/// Item 7: a `Delete`-policy project SVM whose shoots all migrated away from the seed whose
/// project object holds ONTAP's mark: the project object there goes with the migration (waiting
/// while the migrated accounts are on the SVM), so the SVM, its LIFs and accounts go once the
/// last shoot is deleted on the new seed.
#[tokio::test]
async fn a_project_svm_goes_after_its_shoots_migrated_away() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    let project = "8e0a2c4e-6f8a-4b1c-9d3e-5f7a9b1c3d5e";
    let svm_name = naming::project_svm_name(project);
    let project_object = naming::project_object_name(project).unwrap();
    let annotations = json!({"cluster.metal-stack.io/project": project});
    let config = json!({
        "apiVersion": "ontap.extensions.storage.dev/v1alpha1", "kind": "OntapConfig",
        "cluster": w.cluster,
        "svm": {
            "sharing": "PerProject",
            "managementLif": {"ip": "192.0.2.140", "prefixLength": 24},
            "dataLifs": [{"ip": "192.0.2.141", "prefixLength": 24}],
            "protocols": ["nfs"],
            "deletionPolicy": "Delete"
        }
    });
    create_cluster(&g, &ns, annotations.clone()).await;
    let ts = create_extension(&g, &ns, config.clone(), "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;
    let uuid = ontap_svm(&w, &svm_name).unwrap()["uuid"].clone();

    migrate_as_gardenlet(&g, &w, &ns).await;
    let old = extensions(&g, &ns).get("ontap").await.unwrap();
    let old_status = old.status.clone().unwrap();
    let objects = Api::<StorageVirtualMachine>::namespaced(g.seed.clone(), &ns);
    wait_for(
        &w,
        "the old seed's project object goes, waiting for the migrated account",
        async || {
            let p = objects.get_opt(&project_object).await.unwrap()?;
            p.metadata.deletion_timestamp.as_ref().map(|_| ())
        },
    )
    .await;
    assert_eq!(
        svms_in_ontap(&w).len(),
        1,
        "kept while the shoot's account is on it"
    );

    // Restore on a new seed (another namespace, another operator, both running).
    let ns2 = format!("{ns}x");
    let namespace: Namespace = serde_json::from_value(json!({
        "metadata": {"name": ns2, "labels": {"gardener.cloud/role": "shoot"}}
    }))
    .unwrap();
    Api::<Namespace>::all(g.seed.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    create_cluster(&g, &ns2, annotations.clone()).await;
    let old_secrets: Api<Secret> = Api::namespaced(g.seed.clone(), &ns);
    for reference in &old_status.resources {
        let mut secret = old_secrets.get(&reference.resource_ref.name).await.unwrap();
        secret.metadata = kube::api::ObjectMeta {
            name: secret.metadata.name,
            ..Default::default()
        };
        Api::<Secret>::namespaced(g.seed.clone(), &ns2)
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }
    let _grm = g.extra_resource_manager(&ns2);
    let mut new_seed = seed_operator(&w, &ns2);
    create_extension(&g, &ns2, config.clone(), "wait-for-state").await;
    extensions(&g, &ns2)
        .patch_status(
            "ontap",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "state": old_status.state, "resources": old_status.resources
            }})),
        )
        .await
        .unwrap();
    let ts = request(&g, &ns2, "restore").await;
    wait_ready(&g, &w, &ns2, &ts).await;
    assert_eq!(
        ontap_svm(&w, &svm_name).unwrap()["uuid"],
        uuid,
        "the same SVM"
    );
    // gardenlet removes the migrated Extension from the old seed.
    extensions(&g, &ns)
        .delete("ontap", &DeleteParams::default())
        .await
        .unwrap();

    // The project's last shoot is deleted on the new seed: everything goes from ONTAP.
    let gc = garbage_collector_stand_in(g.shoot.clone());
    request(&g, &ns2, "reconcile").await;
    delete_as_gardenlet(&g, &w, &ns2).await;
    gc.abort();
    wait_for(
        &w,
        "the project's SVM, LIFs and accounts gone",
        async || {
            let state = w.state();
            let accounts = state["accounts"].as_array().cloned().unwrap_or_default();
            (ontap_svm(&w, &svm_name).is_none()
                && interfaces_of(&w, &uuid).is_empty()
                && !accounts.iter().any(|a| a["owner"]["uuid"] == uuid))
            .then_some(())
        },
    )
    .await;
    new_seed.kill();
}

/// Item 8: only the migration's finalizer write fails (an admission policy refuses it): the
/// migration is not `Succeeded` while our finalizer is on, and once the write passes it is, and
/// the migrated Extension can be deleted.
#[tokio::test]
async fn a_migration_is_succeeded_only_without_finalizers() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let config = nfs_config(&w.cluster, "192.0.2.150", "192.0.2.151");
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;

    let policy = KeepFinalizer::install(&g.seed, &ns).await;
    request(&g, &ns, "migrate").await;
    // The migration's other steps pass; for a while, it must not claim success.
    let until = Instant::now() + Duration::from_secs(15);
    let mut saw_error = false;
    while Instant::now() < until {
        let ext = extensions(&g, &ns).get("ontap").await.unwrap();
        let last = ext.status.as_ref().and_then(|s| s.last_operation.clone());
        if let Some(last) = last.filter(|l| l.type_ == LastOperationType::Migrate) {
            assert!(
                last.state != LastOperationState::Succeeded,
                "Succeeded with the finalizers {:?}",
                ext.finalizers()
            );
            saw_error |= last.state == LastOperationState::Error;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        saw_error,
        "the refused finalizer write is an error of the migration"
    );
    policy.remove().await;
    wait_for(&w, "Migrate Succeeded without finalizers", async || {
        let ext = extensions(&g, &ns).get("ontap").await.unwrap();
        let last = ext.status.as_ref()?.last_operation.clone()?;
        (last.type_ == LastOperationType::Migrate
            && last.state == LastOperationState::Succeeded
            && ext.finalizers().is_empty())
        .then_some(())
    })
    .await;
    extensions(&g, &ns)
        .delete("ontap", &DeleteParams::default())
        .await
        .unwrap();
    wait_for(&w, "the migrated Extension deleted", async || {
        extensions(&g, &ns)
            .get_opt("ontap")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
}

/// A ValidatingAdmissionPolicy refusing, in one namespace, any write that removes the
/// Extension's finalizer: only that write fails.
struct KeepFinalizer {
    client: kube::Client,
    name: String,
}

fn admission_api(client: &kube::Client, kind: &str) -> Api<DynamicObject> {
    Api::all_with(
        client.clone(),
        &ApiResource::from_gvk(&GroupVersionKind::gvk(
            "admissionregistration.k8s.io",
            "v1",
            kind,
        )),
    )
}

impl KeepFinalizer {
    async fn install(client: &kube::Client, namespace: &str) -> Self {
        let name = format!("keep-finalizer-{namespace}");
        let finalizer = ontap_operator::extension::FINALIZER;
        let policy: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": ["extensions.gardener.cloud"], "apiVersions": ["*"],
                    "operations": ["UPDATE"], "resources": ["extensions"]
                }]},
                "validations": [{
                    "expression": format!(
                        "!has(oldObject.metadata.finalizers) || !('{finalizer}' in oldObject.metadata.finalizers) || (has(object.metadata.finalizers) && '{finalizer}' in object.metadata.finalizers)"
                    ),
                    "message": "test: the finalizer stays"
                }]
            }
        }))
        .unwrap();
        let binding: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {
                "policyName": name, "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {
                    "kubernetes.io/metadata.name": namespace
                }}}
            }
        }))
        .unwrap();
        admission_api(client, "ValidatingAdmissionPolicy")
            .create(&PostParams::default(), &policy)
            .await
            .unwrap();
        admission_api(client, "ValidatingAdmissionPolicyBinding")
            .create(&PostParams::default(), &binding)
            .await
            .unwrap();
        // In force once a dry-run removal is refused.
        let extensions: Api<ontap_operator::extension::api::Extension> =
            Api::namespaced(client.clone(), namespace);
        crate::support::poll("the admission policy in force", TIMEOUT, async || {
            extensions
                .patch(
                    "ontap",
                    &PatchParams::default().dry_run(),
                    &Patch::Merge(json!({"metadata": {"finalizers": null}})),
                )
                .await
                .is_err()
                .then_some(())
                .ok_or_else(|| "a dry-run removal of the finalizers is still admitted".to_owned())
        })
        .await;
        Self {
            client: client.clone(),
            name,
        }
    }

    async fn remove(self) {
        admission_api(&self.client, "ValidatingAdmissionPolicyBinding")
            .delete(&self.name, &DeleteParams::default())
            .await
            .unwrap();
        admission_api(&self.client, "ValidatingAdmissionPolicy")
            .delete(&self.name, &DeleteParams::default())
            .await
            .unwrap();
    }
}
