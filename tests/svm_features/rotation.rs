//! Credential rotation (`src/ontap/svm/rotation.rs`): on a schedule, on request, through
//! faults in ONTAP and crashes between its writes, with a client that keeps logging in with
//! whatever the seed Secret holds and is never refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use ontap_operator::api::StorageVirtualMachine;
use ontap_operator::api::seed_secret::NEXT_PASSWORD_KEY;
use serde_json::json;

use crate::support::metrics::metric_sum;
use crate::support::poll;
use crate::support::svm::{SvmWorld, authenticates_at};

const READY_WITHIN: Duration = Duration::from_secs(60);
/// A requested rotation lands within a couple of passes, faults retried included.
const ROTATED_WITHIN: Duration = Duration::from_secs(60);

/// The seed Secret's `username`, `password` and `nextPassword`.
async fn published(secrets: &Api<Secret>, name: &str) -> (String, String, Option<String>) {
    let data = secrets.get(name).await.unwrap().data.unwrap_or_default();
    let value = |key: &str| {
        data.get(key)
            .map(|v| String::from_utf8(v.0.clone()).unwrap())
    };
    (
        value("username").unwrap_or_default(),
        value("password").unwrap_or_default(),
        value(NEXT_PASSWORD_KEY),
    )
}

/// A client that logs in over and over with what the seed Secret holds, as the reader the
/// contract describes: `password`, then `nextPassword` if present; refused with both, it reads
/// the Secret again once (what it read may predate the rotation) before it counts a failure.
struct Logger {
    stop: Arc<AtomicBool>,
    logins: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<Vec<String>>,
}

impl Logger {
    fn start(world: &SvmWorld, secret: &str, svm: &str) -> Self {
        let (stop, logins) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicUsize::new(0)),
        );
        let secrets = world.secrets();
        let (http, base_url) = (world.mock.http.clone(), world.mock.base_url());
        let (secret, svm) = (secret.to_owned(), svm.to_owned());
        let (until, count) = (stop.clone(), logins.clone());
        let task = tokio::spawn(async move {
            let mut failures = Vec::new();
            while !until.load(Ordering::SeqCst) {
                let mut accepted = false;
                for _read in 0..2 {
                    let (username, password, next) = published(&secrets, &secret).await;
                    for candidate in std::iter::once(password).chain(next) {
                        if authenticates_at(&http, &base_url, &username, &candidate, &svm).await {
                            accepted = true;
                            break;
                        }
                    }
                    if accepted {
                        break;
                    }
                }
                if !accepted {
                    failures.push(format!("refused at {}", Timestamp::now()));
                }
                count.fetch_add(1, Ordering::SeqCst);
            }
            failures
        });
        Self { stop, logins, task }
    }

    /// Waits until it has logged in `n` more times than now.
    async fn logs_in(&self, n: usize) {
        let target = self.logins.load(Ordering::SeqCst) + n;
        poll("the logger logged in", READY_WITHIN, async || {
            (self.logins.load(Ordering::SeqCst) >= target).then_some(())
        })
        .await;
    }

    /// Stops it, asserting that it logged in and was never refused.
    async fn never_refused(self) {
        self.stop.store(true, Ordering::SeqCst);
        let failures = self.task.await.unwrap();
        let logins = self.logins.load(Ordering::SeqCst);
        assert!(logins > 0, "the logger never logged in");
        assert!(
            failures.is_empty(),
            "{} of {logins} logins refused: {failures:?}",
            failures.len()
        );
    }
}

async fn ready(world: &SvmWorld, name: &str, index: u8) -> StorageVirtualMachine {
    world.wait_ready(name, READY_WITHIN).await;
    poll("converged", READY_WITHIN, async || {
        world.converged(name, index).await
    })
    .await;
    world.svms().get(name).await.unwrap()
}

async fn request_rotation(world: &SvmWorld, name: &str, value: &str) {
    let patch =
        json!({"metadata": {"annotations": {"ontap.storage.dev/rotate-credentials": value}}});
    world
        .svms()
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
}

/// Waits until the status records the request `value` and the Secret publishes a password
/// other than `old` with nothing staged; the new password.
async fn rotated_for(world: &SvmWorld, name: &str, value: &str, old: &str) -> String {
    let secrets = world.secrets();
    poll(
        &format!("{name} rotated for request {value}"),
        ROTATED_WITHIN,
        async || {
            let svm = world.svms().get(name).await.map_err(|e| e.to_string())?;
            let status = svm.status.unwrap_or_default();
            if status.rotation_request.as_deref() != Some(value) {
                return Err(format!("rotationRequest {:?}", status.rotation_request));
            }
            status
                .credentials_rotated_at
                .ok_or("no credentialsRotatedAt")?;
            let (_, password, next) = published(&secrets, &format!("{name}-svm-credentials")).await;
            if password == old || next.is_some() {
                return Err("the Secret still holds the old password or a staged one".into());
            }
            world.converged(name, 0).await?;
            Ok(password)
        },
    )
    .await
}

#[tokio::test]
async fn a_requested_rotation_happens_once_per_value_and_logins_never_fail() {
    let world = SvmWorld::start().await;
    world.create_svm("rot", 0).await;
    let svm = ready(&world, "rot", 0).await;
    let svm_name = svm.status.unwrap().svm_name.unwrap();
    let (username, first, _) = published(&world.secrets(), "rot-svm-credentials").await;
    let logger = Logger::start(&world, "rot-svm-credentials", &svm_name);
    logger.logs_in(5).await;

    request_rotation(&world, "rot", "1").await;
    let second = rotated_for(&world, "rot", "1", &first).await;
    assert!(
        !world.authenticates(&username, &first, &svm_name).await,
        "the old password is gone"
    );

    // The same value again, and a pass that sees it: no second rotation.
    world
        .svms()
        .patch(
            "rot",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"poke": "1"}}})),
        )
        .await
        .unwrap();
    world.operator.quiesce(READY_WITHIN).await;
    let (_, still, _) = published(&world.secrets(), "rot-svm-credentials").await;
    assert_eq!(still, second, "one rotation per request value");

    request_rotation(&world, "rot", "2").await;
    rotated_for(&world, "rot", "2", &second).await;
    logger.logs_in(5).await;
    logger.never_refused().await;

    let metrics = world.operator.metrics_text().await;
    let rotations = metric_sum(
        &metrics,
        "ontap_operator_credential_rotations_total",
        &[("trigger", "request"), ("result", "success")],
    );
    assert_eq!(rotations, 2.0, "{metrics}");
    let events: Api<Event> = Api::namespaced(world.env.client.clone(), &world.env.namespace);
    let rotated = events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("CredentialsRotated"))
        .count();
    assert!(rotated >= 1, "a CredentialsRotated Event");
}

#[tokio::test]
async fn faults_during_the_password_change_converge_and_logins_never_fail() {
    let world = SvmWorld::start().await;
    world.create_svm("flt", 0).await;
    let svm = ready(&world, "flt", 0).await;
    let svm_name = svm.status.unwrap().svm_name.unwrap();
    let logger = Logger::start(&world, "flt-svm-credentials", &svm_name);
    logger.logs_in(5).await;
    let mut password = published(&world.secrets(), "flt-svm-credentials").await.1;

    // Refused before it is applied; applied with its answer lost (the Secret then still
    // publishes the old password while ONTAP holds the staged one).
    for (value, fault) in [
        ("refused", json!({"type": "error"})),
        ("lost", json!({"type": "apply_then_reset"})),
    ] {
        let id = world.mock.fault_json(json!({
            "method": "PATCH", "path": "/api/security/accounts/*", "after": 0, "times": 1,
            "action": fault,
        }));
        request_rotation(&world, "flt", value).await;
        password = rotated_for(&world, "flt", value, &password).await;
        assert_eq!(world.mock.hits(&id).await, 1, "the fault {value} was hit");
    }
    logger.never_refused().await;
    let failed = metric_sum(
        &world.operator.metrics_text().await,
        "ontap_operator_credential_rotations_total",
        &[("result", "failure")],
    );
    // The client retries the refused request itself; the lost answer ends a pass part-way.
    assert!(
        failed >= 1.0,
        "the interrupted attempt counted as a failure: {failed}"
    );
}

/// What a crash leaves: the operator's staging write happened (`nextPassword` beside the
/// working password), and ONTAP was switched to it (`switched`) or not yet.
async fn crash_after_staging(world: &SvmWorld, name: &str, staged: &str, switched: bool) {
    let secret = format!("{name}-svm-credentials");
    let (username, ..) = published(&world.secrets(), &secret).await;
    // The whole Secret with the key added, under the operator's own field manager, as its
    // staging write is: its next write, which no longer applies the key, removes it.
    let mut stage = world.secrets().get(&secret).await.unwrap();
    stage.metadata.managed_fields = None;
    stage.metadata.resource_version = None;
    stage.metadata.uid = None;
    stage.metadata.creation_timestamp = None;
    stage.data.get_or_insert_default().insert(
        NEXT_PASSWORD_KEY.to_owned(),
        k8s_openapi::ByteString(staged.as_bytes().to_vec()),
    );
    world
        .secrets()
        .patch(
            &secret,
            &PatchParams::apply("ontap-operator").force(),
            &Patch::Apply(stage),
        )
        .await
        .unwrap();
    if switched {
        let svm = world.svms().get(name).await.unwrap();
        let uuid = svm.status.unwrap().uuid.unwrap();
        world
            .mock
            .as_admin(
                reqwest::Method::PATCH,
                &format!("/api/security/accounts/{uuid}/{username}"),
                json!({"password": staged}),
            )
            .await;
    }
}

#[tokio::test]
async fn a_rotation_interrupted_after_either_write_is_finished() {
    let world = SvmWorld::start().await;
    world.create_svm("crash", 0).await;
    let svm = ready(&world, "crash", 0).await;
    let svm_name = svm.status.unwrap().svm_name.unwrap();
    let logger = Logger::start(&world, "crash-svm-credentials", &svm_name);
    logger.logs_in(5).await;
    for (staged, switched) in [
        ("Staged1BeforeSwitch9xyzAB", false),
        ("Staged2AfterSwitch7xyzCDE", true),
    ] {
        crash_after_staging(&world, "crash", staged, switched).await;
        poll(
            &format!("the staged password published (switched: {switched})"),
            ROTATED_WITHIN,
            async || {
                let (_, password, next) =
                    published(&world.secrets(), "crash-svm-credentials").await;
                (password == staged && next.is_none()).then_some(())
            },
        )
        .await;
        poll("converged", ROTATED_WITHIN, async || {
            world.converged("crash", 0).await
        })
        .await;
    }
    logger.never_refused().await;
}

#[tokio::test]
async fn the_objects_period_beats_the_clusters_default_and_rotates_on_schedule() {
    let world = SvmWorld::start().await;
    // Admission: a period it can parse, and not below a minute.
    for bad in ["30s", "1d", "soon"] {
        let object = world.svm_with("bad", 3, &json!({"account": {"rotationPeriod": bad}}));
        let refused = world
            .svms()
            .create(
                &PostParams::default(),
                &serde_json::from_value(object).unwrap(),
            )
            .await
            .expect_err(bad)
            .to_string();
        assert!(refused.contains("at least 1m"), "{bad}: {refused}");
    }
    let refused = world
        .clusters()
        .patch(
            &world.cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"defaults": {"credentialRotationPeriod": "5s"}}})),
        )
        .await
        .expect_err("5s")
        .to_string();
    assert!(refused.contains("at least 1m"), "{refused}");

    world
        .clusters()
        .patch(
            &world.cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"defaults": {"credentialRotationPeriod": "720h"}}})),
        )
        .await
        .unwrap();
    let own = world.svm_with("own", 0, &json!({"account": {"rotationPeriod": "1m"}}));
    world
        .svms()
        .create(
            &PostParams::default(),
            &serde_json::from_value(own).unwrap(),
        )
        .await
        .unwrap();
    world.create_svm("dflt", 1).await;
    let dflt = ready(&world, "dflt", 1).await;
    let own = ready(&world, "own", 0).await;

    let due = |svm: &StorageVirtualMachine| {
        let status = svm.status.clone().unwrap_or_default();
        let created = svm.metadata.creation_timestamp.clone().unwrap().0;
        let due = status.credentials_rotation_due.expect("a due time").0;
        due.duration_since(created).as_secs()
    };
    assert_eq!(due(&dflt), 720 * 3600, "the cluster's default");
    assert_eq!(due(&own), 60, "the object's own period");

    let svm_name = own.status.clone().unwrap().svm_name.unwrap();
    let (_, first, _) = published(&world.secrets(), "own-svm-credentials").await;
    let logger = Logger::start(&world, "own-svm-credentials", &svm_name);
    // Due a minute after creation; the operator wakes the object then, with no pass asked.
    let rotated_at = poll(
        "the scheduled rotation",
        Duration::from_secs(150),
        async || {
            let svm = world.svms().get("own").await.map_err(|e| e.to_string())?;
            let status = svm.status.unwrap_or_default();
            let at = status.credentials_rotated_at.ok_or("not rotated yet")?.0;
            let due = status.credentials_rotation_due.ok_or("no due time")?.0;
            (due.duration_since(at).as_secs() == 60)
                .then_some(at)
                .ok_or_else(|| "the next due time is not a period later".to_owned())
        },
    )
    .await;
    let created = own.metadata.creation_timestamp.unwrap().0;
    assert!(
        rotated_at.duration_since(created).as_secs() >= 60,
        "not before it was due"
    );
    poll("the new password published", ROTATED_WITHIN, async || {
        let (_, password, next) = published(&world.secrets(), "own-svm-credentials").await;
        (password != first && next.is_none()).then_some(())
    })
    .await;
    logger.logs_in(3).await;
    logger.never_refused().await;
    let scheduled = metric_sum(
        &world.operator.metrics_text().await,
        "ontap_operator_credential_rotations_total",
        &[("trigger", "schedule"), ("result", "success")],
    );
    assert!(scheduled >= 1.0);
    // The default's object has not rotated: its period is 30 days.
    let dflt = world.svms().get("dflt").await.unwrap();
    assert!(dflt.status.unwrap().credentials_rotated_at.is_none());
}
