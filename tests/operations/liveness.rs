//! `/healthz` notices a stuck reconcile: one running far longer than its timeouts allow.

use std::time::Duration;

use crate::support::mock::fast_mock;
use crate::support::svm::SvmWorld;
use crate::support::{tail, try_poll_every};
use mock_ontap::{FaultAction, FaultSpec};

#[tokio::test]
async fn healthz_fails_while_a_reconcile_runs_past_the_stuck_limit_and_recovers() {
    // The limit is shrunk from its 10 minutes to 2 s; the ONTAP timeout stays above the delay,
    // so the reconcile is slow, not failed.
    let world = SvmWorld::with(
        fast_mock(),
        &["--stuck-reconcile-after=2s", "--ontap-request-timeout=20s"],
    )
    .await;
    world
        .operator
        .wait_readyz(200, Duration::from_secs(60))
        .await;
    let (status, body) = world.operator.healthz().await.unwrap();
    assert_eq!(status, 200, "{body}");

    world
        .mock
        .state()
        .add_fault(FaultSpec {
            method: Some("GET".into()),
            path: "/api/svm/svms".into(),
            after: 0,
            times: Some(1),
            probability: None,
            action: FaultAction::Delay { ms: 8000 },
        })
        .unwrap();
    world.create_svm("slow", 0).await;

    let stuck = try_poll_every(
        Duration::from_secs(20),
        Duration::from_millis(200),
        async || {
            world
                .operator
                .healthz()
                .await
                .filter(|(status, _)| *status != 200)
        },
    )
    .await;
    let body = match stuck {
        Ok((_, body)) => body,
        Err(why) => panic!(
            "/healthz stayed 200 while a reconcile was stuck: {why}\n{}",
            tail(&world.operator.logs(), 30)
        ),
    };
    assert!(
        body.contains("reconcile-storagevirtualmachine"),
        "the failing check names the controller: {body}"
    );

    world.wait_ready("slow", Duration::from_secs(60)).await;
    let (status, body) = world.operator.healthz().await.unwrap();
    assert_eq!(status, 200, "once the reconcile ended: {body}");
}
