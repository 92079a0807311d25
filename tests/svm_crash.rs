//! The StorageVirtualMachine controller when its process dies at any moment: provisioning must
//! resume from what ONTAP and the API server hold, never from memory, and never twice.
#![allow(clippy::unwrap_used)]

use operator_test_support as support;

use std::collections::BTreeSet;
use std::time::Duration;

use mock_ontap::{FaultAction, FaultSpec};
use rand::Rng;
use support::mock::fast_mock;
use support::poll;
use support::svm::SvmWorld;

const SVMS: u8 = 10;
const KILLS: usize = 30;

#[tokio::test]
async fn ten_svms_provisioned_through_thirty_operator_kills_are_all_ready_without_duplicates() {
    let mut world = slow_world(&[]).await;
    let names: Vec<String> = (0..SVMS).map(|i| format!("crash-{i}")).collect();
    for (i, name) in (0..SVMS).zip(&names) {
        world.create_svm(name, i).await;
    }

    // Kills count only while some SVM is not Ready yet; a bound keeps a controller that
    // finishes early from looping here for ever.
    let (kills, during_provisioning, during_jobs) =
        kill_while_busy(&mut world, KILLS, async |world| {
            ready_count(world).await < usize::from(SVMS)
        })
        .await;
    eprintln!(
        "{kills} kills: {during_provisioning} before all SVMs were Ready, {during_jobs} with an ONTAP job running"
    );
    assert!(
        during_provisioning >= KILLS,
        "only {during_provisioning} of {kills} kills landed during provisioning"
    );
    assert!(
        during_jobs >= KILLS / 6,
        "only {during_jobs} of {kills} kills landed while a job ran"
    );

    poll("all SVMs converged", Duration::from_secs(180), async || {
        for (i, name) in (0..SVMS).zip(&names) {
            world
                .converged(name, i)
                .await
                .map_err(|e| format!("{name}: {e}"))?;
        }
        Ok(())
    })
    .await;

    // What the operator sent, not what the mock kept: the mock refuses a second SVM of a name,
    // so only the count of creates that reached it shows a create repeated after a kill. A kill
    // during a request's delay drops it unanswered and unapplied; an answered create is found
    // by name after the restart, never sent again.
    for (path, objects) in [
        ("/api/svm/svms", SVMS),
        ("/api/network/ip/interfaces", 2 * SVMS),
        ("/api/security/accounts", SVMS),
    ] {
        assert_eq!(
            world.mock.state().request_count("POST", path),
            u64::from(objects),
            "POST {path} answered by ONTAP, for {objects} objects"
        );
    }

    let state = world.state();
    let svms = state["svms"].as_array().unwrap();
    let distinct: BTreeSet<&str> = svms.iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(svms.len(), usize::from(SVMS), "{state}");
    assert_eq!(
        distinct.len(),
        usize::from(SVMS),
        "duplicate names: {state}"
    );
    assert_eq!(
        state["interfaces"].as_array().unwrap().len(),
        2 * usize::from(SVMS),
        "{state}"
    );
    let ours = state["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["name"] != "vsadmin")
        .count();
    assert_eq!(ours, usize::from(SVMS), "{state}");
}

/// Kills while passwords are repaired and while objects are deleted: every repair ends with
/// working credentials, and every deletion with nothing left in ONTAP or Kubernetes.
#[tokio::test]
async fn rotations_and_deletions_through_operator_kills_leave_working_credentials_then_nothing() {
    // Passes come often, so that a password changed in ONTAP is noticed within seconds.
    let mut world = slow_world(&["--sync-period=3s"]).await;
    let names: Vec<String> = (0..SVMS).map(|i| format!("cycle-{i}")).collect();
    for (i, name) in (0..SVMS).zip(&names) {
        world.create_svm(name, i).await;
    }
    let all_converged = async |world: &SvmWorld| {
        for (i, name) in (0..SVMS).zip(&names) {
            world
                .converged(name, i)
                .await
                .map_err(|e| format!("{name}: {e}"))?;
        }
        Ok::<(), String>(())
    };
    poll("all SVMs converged", Duration::from_secs(240), async || {
        all_converged(&world).await
    })
    .await;

    // Someone resets every account's password in ONTAP.
    for name in &names {
        let svm = world.svms().get(name).await.unwrap();
        let status = svm.status.unwrap();
        let (username, _, _) = world
            .seed_credentials(status.secret_ref.as_deref().unwrap())
            .await
            .unwrap();
        world
            .mock
            .as_admin(
                reqwest::Method::PATCH,
                &format!("/api/security/accounts/{}/{username}", status.uuid.unwrap()),
                serde_json::json!({ "password": "Behind0urBack9" }),
            )
            .await;
    }
    let (kills, during_repair, _) = kill_while_busy(&mut world, KILLS / 3, async |world| {
        all_converged(world).await.is_err()
    })
    .await;
    eprintln!("{kills} kills: {during_repair} while credentials were being repaired");
    assert!(
        during_repair >= KILLS / 3,
        "only {during_repair} of {kills} kills landed during the repair"
    );
    poll(
        "all credentials repaired",
        Duration::from_secs(240),
        async || all_converged(&world).await,
    )
    .await;

    for name in &names {
        world
            .svms()
            .delete(name, &Default::default())
            .await
            .unwrap();
    }
    let remaining = async |world: &SvmWorld| {
        world
            .svms()
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len()
    };
    let (kills, during_deletion, during_jobs) =
        kill_while_busy(&mut world, KILLS / 3, async |world| {
            remaining(world).await > 0
        })
        .await;
    eprintln!(
        "{kills} kills: {during_deletion} during deletion, {during_jobs} with an ONTAP job running"
    );
    assert!(
        during_deletion >= KILLS / 3,
        "only {during_deletion} of {kills} kills landed during deletion"
    );
    poll("every object gone", Duration::from_secs(240), async || {
        (remaining(&world).await == 0).then_some(())
    })
    .await;
    let state = world.state();
    for kind in ["svms", "interfaces"] {
        assert!(
            state[kind].as_array().unwrap().is_empty(),
            "{kind} left: {state}"
        );
    }
    let accounts: Vec<&serde_json::Value> = state["accounts"].as_array().unwrap().iter().collect();
    assert!(accounts.is_empty(), "accounts left: {state}");
    let secrets = world
        .secrets()
        .list(&Default::default())
        .await
        .unwrap()
        .items;
    assert!(
        secrets.iter().all(|s| !s
            .metadata
            .name
            .as_deref()
            .unwrap_or_default()
            .ends_with("-svm-credentials")),
        "seed Secrets left"
    );
}

/// One SVM at a time, and an ONTAP that takes 300 ms per answer (real ones take 100 ms to
/// seconds) and 1.5 s per job (real SVM jobs take seconds): the work lasts long enough for every
/// kill to interrupt it, even now that an SVM costs about nine requests. A job is the one window
/// a kill can land in per SVM (a create is sent once), so it must outlast a restart: at 300 ms,
/// a loaded machine's restarts ate it, and as few as 4 of 30 kills caught a job.
async fn slow_world(extra: &[&str]) -> SvmWorld {
    let mut config = fast_mock();
    config.settings.job_duration_ms = 1_500;
    let mut args = vec!["--max-concurrent-reconciles=1"];
    args.extend_from_slice(extra);
    let world = SvmWorld::with(config, &args).await;
    world
        .mock
        .state()
        .add_fault(FaultSpec {
            method: None,
            path: "/api/*".into(),
            after: 0,
            times: None,
            probability: None,
            action: FaultAction::Delay { ms: 300 },
        })
        .unwrap();
    world
}

async fn ready_count(world: &SvmWorld) -> usize {
    world
        .svms()
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|s| {
            s.status.as_ref().is_some_and(|status| {
                status
                    .conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
            })
        })
        .count()
}

fn job_running(world: &SvmWorld) -> bool {
    world.state()["jobs"].as_array().is_some_and(|jobs| {
        jobs.iter()
            .any(|j| j["state"] == "running" || j["state"] == "queued")
    })
}

/// Kills the operator at random moments (100 ms to 1.5 s apart, every third one while an ONTAP
/// job runs) until `kills` of them landed while `busy` said work was left, or three times as
/// many were tried. Returns the kills tried, those that landed while busy, and those that
/// landed while a job ran.
async fn kill_while_busy(
    world: &mut SvmWorld,
    kills: usize,
    busy: impl AsyncFn(&SvmWorld) -> bool,
) -> (usize, usize, usize) {
    let mut rng = rand::rng();
    let (mut tried, mut during_work, mut during_jobs) = (0, 0, 0);
    while during_work < kills && tried < 3 * kills {
        let delay = rng.random_range(100..=1500);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        // Every third kill waits (bounded) for an ONTAP job in flight, so that some surely
        // land between a job's start and the operator learning its outcome.
        if tried % 3 == 2 {
            // No job within the bound is an outcome too: this kill then lands without one.
            let _ = support::try_poll_every(
                Duration::from_secs(3),
                Duration::from_millis(10),
                async || job_running(world).then_some(()),
            )
            .await;
        }
        let working = busy(world).await;
        let jobs_running = job_running(world);
        world.restart_operator();
        tried += 1;
        if working {
            during_work += 1;
        }
        if jobs_running {
            during_jobs += 1;
        }
    }
    (tried, during_work, during_jobs)
}
