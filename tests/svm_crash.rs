//! The StorageVirtualMachine controller when its process dies at any moment: provisioning must
//! resume from what ONTAP and the API server hold, never from memory, and never twice.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use mock_ontap::{FaultAction, FaultSpec};
use rand::Rng;
use support::mock::fast_mock;
use support::poll;
use support::svm::SvmWorld;

const SVMS: u8 = 10;
const KILLS: usize = 30;

#[tokio::test]
async fn ten_svms_provisioned_through_thirty_operator_kills_are_all_ready_without_duplicates() {
    let mut config = fast_mock();
    // Long enough that kills land while ONTAP jobs are running.
    config.settings.job_duration_ms = 300;
    // One SVM at a time, and an ONTAP that takes 300 ms per answer (real ones take 100 ms to
    // seconds): provisioning then lasts long enough for every kill to interrupt it, even now
    // that an SVM costs about nine requests.
    let mut world = SvmWorld::with(config, &["--max-concurrent-reconciles=1"]).await;
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
    let names: Vec<String> = (0..SVMS).map(|i| format!("crash-{i}")).collect();
    for (i, name) in (0..SVMS).zip(&names) {
        world.create_svm(name, i).await;
    }

    let mut rng = rand::rng();
    let (mut kills, mut during_provisioning, mut during_jobs) = (0, 0, 0);
    // Kills count only while some SVM is not Ready yet; a bound keeps a controller that
    // finishes early from looping here for ever.
    while during_provisioning < KILLS && kills < 3 * KILLS {
        let delay = rng.random_range(100..=1500);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        // Every third kill waits (bounded) for an ONTAP job in flight, so that some surely
        // land between a job's start and the operator learning its outcome.
        if kills % 3 == 2 {
            let deadline = Instant::now() + Duration::from_secs(3);
            while !job_running(&world) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        let ready = ready_count(&world).await;
        let jobs_running = job_running(&world);
        world.restart_operator();
        kills += 1;
        if ready < usize::from(SVMS) {
            during_provisioning += 1;
        }
        if jobs_running {
            during_jobs += 1;
        }
    }
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
