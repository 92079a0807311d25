//! The StorageVirtualMachine controller against faults on the Kubernetes side and in ONTAP
//! behind its back, bad references, and what a resync of a Ready SVM costs.

use std::time::{Duration, Instant};

use crate::support::admission::{self, Policy, probe_create, wait_enforced};
use crate::support::fixtures::ontap_cluster;
use crate::support::metrics::{kube_writes, metric_sum};
use crate::support::mock::fast_mock;
use crate::support::poll;
use crate::support::svm::SvmWorld;
use kube::api::{Api, Patch, PatchParams, PostParams};
use ontap_operator::api::{OntapCluster, StorageVirtualMachine};
use serde_json::{Value, json};

const READY_WITHIN: Duration = Duration::from_secs(60);
/// A repair must land within a couple of passes.
const REPAIRED_WITHIN: Duration = Duration::from_secs(30);

async fn ready_credentials(world: &SvmWorld, name: &str) -> (String, String, String) {
    world.wait_ready(name, READY_WITHIN).await;
    poll("converged", REPAIRED_WITHIN, async || {
        world.converged(name, 0).await
    })
    .await;
    world
        .seed_credentials(&format!("{name}-svm-credentials"))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_deleted_seed_secret_is_recreated_with_working_credentials() {
    let world = SvmWorld::start().await;
    world.create_svm("gone", 0).await;
    let (_, old_password, _) = ready_credentials(&world, "gone").await;

    world
        .secrets()
        .delete("gone-svm-credentials", &Default::default())
        .await
        .unwrap();
    let new_password = poll(
        "the Secret recreated and working",
        REPAIRED_WITHIN,
        async || {
            world.converged("gone", 0).await?;
            let (_, password, _) = world
                .seed_credentials("gone-svm-credentials")
                .await
                .ok_or("no Secret")?;
            Ok(password)
        },
    )
    .await;
    // The old password lived only in the deleted Secret; it must not survive in ONTAP.
    assert_ne!(new_password, old_password);
}

#[tokio::test]
async fn a_removed_key_is_repaired() {
    let world = SvmWorld::start().await;
    world.create_svm("keys", 0).await;
    ready_credentials(&world, "keys").await;

    for key in ["password", "managementLIF"] {
        let remove: json_patch::Patch =
            serde_json::from_value(json!([{ "op": "remove", "path": format!("/data/{key}") }]))
                .unwrap();
        world
            .secrets()
            .patch(
                "keys-svm-credentials",
                &PatchParams::default(),
                &Patch::<()>::Json(remove),
            )
            .await
            .unwrap();
        poll(
            &format!("the Secret repaired after removing {key}"),
            REPAIRED_WITHIN,
            async || {
                let secret = world
                    .secrets()
                    .get("keys-svm-credentials")
                    .await
                    .map_err(|e| e.to_string())?;
                let data = secret.data.unwrap_or_default();
                let mut keys: Vec<&str> = data.keys().map(String::as_str).collect();
                keys.sort_unstable();
                if keys != ["managementLIF", "password", "svm", "svmUUID", "username"] {
                    return Err(format!("keys {keys:?}"));
                }
                world.converged("keys", 0).await
            },
        )
        .await;
    }
    let (_, _, _) = world
        .seed_credentials("keys-svm-credentials")
        .await
        .unwrap();
    let secret = world.secrets().get("keys-svm-credentials").await.unwrap();
    assert_eq!(
        secret.data.unwrap()["managementLIF"].0,
        b"192.0.2.10",
        "managementLIF is the spec's"
    );
}

#[tokio::test]
async fn a_password_changed_in_ontap_is_detected_on_the_next_pass_and_repaired() {
    let world = SvmWorld::with(fast_mock(), &["--sync-period=3s"]).await;
    world.create_svm("drift", 0).await;
    let (username, old_password, svm_name) = ready_credentials(&world, "drift").await;
    let uuid = world
        .svms()
        .get("drift")
        .await
        .unwrap()
        .status
        .unwrap()
        .uuid
        .unwrap();

    // Someone resets the password in ONTAP, as an admin would from the CLI.
    let ours = "Behind0urBack9";
    world
        .mock
        .as_admin(
            reqwest::Method::PATCH,
            &format!("/api/security/accounts/{uuid}/{username}"),
            json!({ "password": ours }),
        )
        .await;
    assert!(
        !world
            .authenticates(&username, &old_password, &svm_name)
            .await
    );

    let changed_at = Instant::now();
    let repaired = poll(
        "the Secret's credentials work again",
        REPAIRED_WITHIN,
        async || {
            world.converged("drift", 0).await?;
            let (_, password, _) = world
                .seed_credentials("drift-svm-credentials")
                .await
                .ok_or("no Secret")?;
            if password == old_password {
                return Err("the Secret still holds the old password".into());
            }
            Ok(password)
        },
    )
    .await;
    eprintln!(
        "drift repaired {:?} after the change (sync period 3s)",
        changed_at.elapsed()
    );
    assert_ne!(repaired, ours, "the operator sets a password of its own");
    assert!(
        !world.authenticates(&username, ours, &svm_name).await,
        "the password set behind our back no longer works"
    );
}

/// A ValidatingAdmissionPolicy denying the creation of Secrets in the world's namespace.
async fn deny_secret_creation(world: &SvmWorld, message: &str) -> Policy {
    let policy = admission::deny(
        &world.env.client,
        &world.env.namespace,
        ("", "secrets"),
        &["CREATE"],
        "false",
        message,
    )
    .await;
    wait_enforced(message, async || probe_create(&world.secrets()).await).await;
    policy
}

async fn allow_secret_creation(world: &SvmWorld, policy: Policy) {
    policy
        .lift(async || probe_create(&world.secrets()).await)
        .await;
}

fn svm_reconciles(metrics: &str) -> f64 {
    metric_sum(
        metrics,
        "controller_runtime_reconcile_total",
        &[("controller", "storagevirtualmachine")],
    )
}

/// Status, reason and message of condition `type_`.
fn condition(svm: &StorageVirtualMachine, type_: &str) -> Result<(String, String, String), String> {
    let status = svm.status.clone().unwrap_or_default();
    let c = status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .ok_or_else(|| format!("no condition {type_}: {:?}", status.conditions))?;
    Ok((c.status.clone(), c.reason.clone(), c.message.clone()))
}

#[tokio::test]
async fn secret_creation_denied_by_admission_is_reported_retried_with_backoff_and_recovers() {
    let world = SvmWorld::start().await;
    let message = format!(
        "secrets are frozen in {} by a test policy",
        world.env.namespace
    );

    // 1. Denied from the start: the Secret is written before the account is created (so the
    //    account's password is never lost), so the first denial stops AccountReady.
    let policy = deny_secret_creation(&world, &message).await;
    world.create_svm("denied", 0).await;
    let svm = poll("the denial in the status", READY_WITHIN, async || {
        let svm = world
            .svms()
            .get("denied")
            .await
            .map_err(|e| e.to_string())?;
        let (status, reason, text) = condition(&svm, "Ready")?;
        if status == "False" && text.contains(&message) {
            Ok(svm)
        } else {
            Err(format!("Ready {status} {reason}: {text}"))
        }
    })
    .await;
    let (_, reason, text) = condition(&svm, "Ready").unwrap();
    assert_eq!(reason, "SecretWriteFailed", "{text}");
    assert!(
        !condition(&svm, "SecretReady").is_ok_and(|c| c.0 == "True"),
        "SecretReady must not claim success"
    );

    // Failures back off (1 s doubling, at most 5 s here): a hot loop would reconcile many
    // times a second. The observation window is inherently a wait.
    let before = svm_reconciles(&world.operator.metrics_text().await);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let during = svm_reconciles(&world.operator.metrics_text().await) - before;
    eprintln!("reconciles in 10 s while the Secret is denied: {during}");
    assert!(
        (1.0..=6.0).contains(&during),
        "{during} reconciles in 10 s: expected a few, backed off"
    );
    assert!(
        world
            .secrets()
            .get_opt("denied-svm-credentials")
            .await
            .unwrap()
            .is_none(),
        "the policy holds"
    );
    let accounts = world.state()["accounts"].as_array().unwrap().clone();
    assert!(
        accounts.iter().all(|a| a["name"] == "vsadmin"),
        "no account without a stored password: {accounts:?}"
    );

    allow_secret_creation(&world, policy).await;
    poll("converged once allowed", REPAIRED_WITHIN, async || {
        world.converged("denied", 0).await
    })
    .await;

    // 2. Denied later: the Secret of a Ready SVM is deleted and may not be created again.
    let policy = deny_secret_creation(&world, &message).await;
    world
        .secrets()
        .delete("denied-svm-credentials", &Default::default())
        .await
        .unwrap();
    poll(
        "SecretReady False with the denial",
        REPAIRED_WITHIN,
        async || {
            let svm = world
                .svms()
                .get("denied")
                .await
                .map_err(|e| e.to_string())?;
            let (status, reason, text) = condition(&svm, "SecretReady")?;
            if status == "False" && reason == "SecretWriteFailed" && text.contains(&message) {
                Ok(())
            } else {
                Err(format!("SecretReady {status} {reason}: {text}"))
            }
        },
    )
    .await;
    allow_secret_creation(&world, policy).await;
    poll(
        "converged once allowed again",
        REPAIRED_WITHIN,
        async || world.converged("denied", 0).await,
    )
    .await;
}

#[tokio::test]
async fn a_missing_cluster_or_admin_secret_gives_a_clear_condition() {
    let world = SvmWorld::start().await;
    let ns = world.env.namespace.clone();

    let mut manifest = world.svm("orphan", 0).json();
    manifest["spec"]["clusterRef"]["name"] = json!("no-such-cluster");
    let svm: StorageVirtualMachine = serde_json::from_value(manifest).unwrap();
    world
        .svms()
        .create(&PostParams::default(), &svm)
        .await
        .unwrap();
    let svm = world
        .wait_condition("orphan", "ClusterReady", "False", READY_WITHIN)
        .await;
    let (_, reason, message) = condition(&svm, "ClusterReady").unwrap();
    assert_eq!(reason, "ClusterNotFound");
    assert!(message.contains("no-such-cluster"), "{message}");
    assert_eq!(
        world.readiness("orphan").await.2.as_deref(),
        Some("Pending")
    );

    // A cluster whose admin Secret does not exist.
    let cluster = format!("c-{ns}-nosecret");
    let object = ontap_cluster(&cluster)
        .endpoint(&world.mock.base_url())
        .credentials(&ns, "absent-admin")
        .ca(&ns, "ontap-ca")
        .label("ontap-test", &ns)
        .build();
    let clusters: Api<OntapCluster> = Api::all(world.env.client.clone());
    clusters
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    let why = poll(
        "the cluster not Ready for its Secret",
        READY_WITHIN,
        async || {
            let status = clusters
                .get(&cluster)
                .await
                .map_err(|e| e.to_string())?
                .status
                .unwrap_or_default();
            match status.conditions.iter().find(|c| c.type_ == "Ready") {
                Some(c) if c.status == "False" && c.reason == "SecretNotFound" => {
                    Ok(c.message.clone())
                }
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    assert!(why.contains(&format!("{ns}/absent-admin")), "{why}");

    let mut manifest = world.svm("waiting", 1).json();
    manifest["spec"]["clusterRef"]["name"] = json!(cluster);
    let svm: StorageVirtualMachine = serde_json::from_value(manifest).unwrap();
    world
        .svms()
        .create(&PostParams::default(), &svm)
        .await
        .unwrap();
    let message = poll(
        "the SVM waiting for its cluster",
        READY_WITHIN,
        async || {
            let svm = world
                .svms()
                .get("waiting")
                .await
                .map_err(|e| e.to_string())?;
            let status = svm.status.clone().unwrap_or_default();
            match status.conditions.iter().find(|c| c.type_ == "ClusterReady") {
                Some(c)
                    if c.status == "False"
                        && c.reason == "ClusterNotReady"
                        && c.message.contains("absent-admin") =>
                {
                    Ok(c.message.clone())
                }
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    assert!(message.contains(&cluster), "{message}");
    assert_eq!(
        world.readiness("waiting").await.2.as_deref(),
        Some("Pending")
    );
    assert!(
        world.state()["svms"].as_array().unwrap().is_empty(),
        "nothing is provisioned for either"
    );
}

/// One request of the log: sequence number, method, path, user.
fn entries(log: &[Value]) -> Vec<(u64, String, String, String)> {
    log.iter()
        .map(|r| {
            (
                r["seq"].as_u64().unwrap_or_default(),
                r["method"].as_str().unwrap_or_default().to_owned(),
                r["path"].as_str().unwrap_or_default().to_owned(),
                r["user"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_resync_of_a_ready_svm_writes_nothing_to_kubernetes_and_few_requests_to_ontap() {
    let world = SvmWorld::with(fast_mock(), &["--sync-period=3s"]).await;
    world.create_svm("steady", 0).await;
    let (username, _, _) = ready_credentials(&world, "steady").await;

    // A pass ends with the operator's credential check as the SVM account; from here on the
    // test makes no request as that account itself.
    let baseline = entries(&world.requests().await).last().map_or(0, |e| e.0);
    let pass_end = async |after: u64| -> u64 {
        poll(
            "the end of the next pass",
            Duration::from_secs(15),
            async || {
                entries(&world.requests().await)
                    .iter()
                    .find(|(seq, _, _, user)| *seq > after && *user == username)
                    .map(|e| e.0)
                    .ok_or_else(|| "no credential check yet".to_string())
            },
        )
        .await
    };
    // Passes are a sync period (3 s) apart: once the operator has settled after one, its status
    // write is done and the next has not begun. The counter readings fall into those gaps; the
    // settled time is short of the gap, whose start the pass's write may take up.
    let settled = async || {
        world
            .operator
            .quiesce_for(Duration::from_millis(500), READY_WITHIN)
            .await
    };
    let first = pass_end(baseline).await;
    settled().await;
    let writes_before = kube_writes(&world.operator.metrics_text().await);
    let second = pass_end(first).await;
    settled().await;
    let writes_after = kube_writes(&world.operator.metrics_text().await);
    let log = entries(&world.requests().await);
    let pass: Vec<String> = log
        .iter()
        .filter(|(seq, _, path, _)| (first + 1..=second).contains(seq) && path != "/api/cluster")
        .map(|(_, method, path, user)| format!("{method} {path} as {user}"))
        .collect();
    eprintln!(
        "one resync of a Ready SVM: {} ONTAP requests: {pass:#?}; Kubernetes writes: {}",
        pass.len(),
        writes_after - writes_before
    );
    assert_eq!(
        writes_after - writes_before,
        0.0,
        "a resync that finds everything in order writes nothing to Kubernetes"
    );
    // SVM, LIFs, and the account read as itself with the Secret's credentials: 3 GETs.
    assert!(
        pass.len() <= 3,
        "{} ONTAP requests in one resync: {pass:#?}",
        pass.len()
    );
    assert!(
        pass.iter().all(|r| r.starts_with("GET ")),
        "a resync only reads: {pass:#?}"
    );
    assert_eq!(
        pass.iter()
            .filter(|r| r.ends_with(&format!(" as {username}")))
            .count(),
        1,
        "exactly one pass in the window: {pass:#?}"
    );
}
