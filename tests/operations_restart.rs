//! `/readyz` is deep: it follows the API server actually answering, not a port being open.
//! Alone in its test binary because it stops the binary's API server.
#![allow(clippy::unwrap_used)]

use operator_test_support as support;

use std::process::Command;
use std::time::Duration;

use support::operator::{OperatorProcess, operator_identity};

fn control_plane_script(action: &str) {
    let dir = support::control_plane().dir.as_ref().unwrap();
    let status = Command::new(support::repo_root().join("hack/control-plane.sh"))
        .args([action, "--dir"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success(), "control-plane.sh {action} failed");
}

#[tokio::test]
async fn readyz_turns_503_when_the_api_server_goes_and_recovers_when_it_returns() {
    let env = support::env().await;
    let kubeconfig = operator_identity(&env.client).await;
    let operator = OperatorProcess::spawn(&kubeconfig, &[], &[]);
    operator.wait_readyz(200, Duration::from_secs(30)).await;
    let (_, body) = operator.readyz().await.unwrap();
    assert!(body.contains("[+]apiserver ok"), "{body}");
    assert!(body.contains("[+]leader-election ok"), "{body}");

    control_plane_script("stop-apiserver");
    let took = operator.wait_readyz(503, Duration::from_secs(30)).await;
    let (_, body) = operator.readyz().await.unwrap();
    assert!(
        took <= Duration::from_secs(15),
        "/readyz took {took:?} to notice the API server is gone"
    );
    assert!(body.contains("[-]apiserver failed"), "{body}");

    control_plane_script("start-apiserver");
    operator.wait_readyz(200, Duration::from_secs(30)).await;
}
