//! Password drift behind the operator's back, as gardenlet meets it: a metal-stack
//! `TridentConfig` shoot, its account's password changed in ONTAP, and gardenlet's reconcile
//! request. The Extension finds the published credentials failing, asks the SVM controller to
//! verify now, and the healed password reaches the shoot through the real resource manager
//! well inside gardenlet's three-minute wait.

use std::time::{Duration, Instant};

use crate::support::gardener::Gardener;
use serde_json::json;

use super::gardenlet::*;

const PROJECT: &str = "0b1f9c3e-aaaa-bbbb-cccc-123456789abc";
const SVM: &str = "p0b1f9c3eaaaabbbbcccc123456789abc";
/// gardenlet waits three minutes for an Extension; a repair must take a fraction of that.
const HEALED_WITHIN: Duration = Duration::from_secs(30);

#[tokio::test]
async fn drifted_password_is_healed_and_redelivered_at_once() {
    let g = Gardener::start().await;
    let w = world(&g).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({"cluster.metal-stack.io/project": PROJECT})).await;
    let config = json!({
        "apiVersion": "ontap.metal.extensions.gardener.cloud/v1alpha1", "kind": "TridentConfig",
        "svmIpaddresses": {"managementLif": "192.0.2.40", "dataLifs": ["192.0.2.41"]},
    });
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;
    let shoot = ns.rsplit("--").next().unwrap();
    let secret = format!("{SVM}-test--{shoot}-credentials");
    let (user, before) = shoot_credentials(&g, &secret).await.unwrap();
    assert!(w.authenticates(&user, &before, SVM).await);

    // Behind our back: someone sets another password on the shoot's account.
    let uuid = ontap_svm(&w, SVM).unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_owned();
    w.mock
        .as_admin(
            reqwest::Method::PATCH,
            &format!("/api/security/accounts/{uuid}/{user}"),
            json!({"password": "Dr1ftedAway"}),
        )
        .await;
    assert!(!w.authenticates(&user, &before, SVM).await);

    // gardenlet's reconcile: the Extension finds the delivered credentials failing while the
    // SVM object still says Ready; the SVM is verified now, healed, and re-delivered.
    let started = Instant::now();
    let ts = request(&g, &ns, "reconcile").await;
    wait_for(&w, "the shoot's credentials healed", async || {
        let (u, p) = shoot_credentials(&g, &secret).await?;
        (p != before && p != "Dr1ftedAway" && w.authenticates(&u, &p, SVM).await).then_some(())
    })
    .await;
    let healed = started.elapsed();
    let ready = wait_ready(&g, &w, &ns, &ts).await;
    let total = started.elapsed();
    println!("drift → shoot healed: {healed:?}; Succeeded: {total:?} ({ready:?} after)");
    assert!(
        total < HEALED_WITHIN,
        "healed and Succeeded only after {total:?}\n--- operator log ---\n{}",
        crate::support::tail(&w.operator.logs(), 60)
    );
}

/// A deleted seed Secret gets a new password, which then waits out the window in which an older
/// password request could still land (twice the ONTAP request timeout: a minute with the
/// default 30 s). The shoot gets the new password at once, not after that window: its old one
/// certainly fails meanwhile.
#[tokio::test]
async fn a_replaced_password_reaches_the_shoot_before_its_settling_window_ends() {
    let g = Gardener::start().await;
    let mut args = operator_args(&g.namespace);
    args.push("--ontap-request-timeout=30s".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let w = crate::support::svm::SvmWorld::with(crate::support::mock::fast_mock(), &args).await;
    bind_extension_rules(&w.env.client).await;
    let ns = g.namespace.clone();
    create_cluster(&g, &ns, json!({})).await;
    let config = nfs_config(&w.cluster, "192.0.2.44", "192.0.2.45");
    let ts = create_extension(&g, &ns, config, "reconcile").await;
    wait_ready(&g, &w, &ns, &ts).await;
    let secret = "ontap-svm-credentials";
    let (user, before) = shoot_credentials(&g, secret).await.unwrap();
    let svm = svms_in_ontap(&w)[0]["name"].as_str().unwrap().to_owned();

    // ONTAP takes its time setting the new password: the Extension meets the new Secret's
    // password failing until then, and then the SVM settling.
    let slow = w.mock.fault_json(json!({
        "method": "PATCH", "path": "/api/security/accounts/*", "times": 1,
        "action": {"type": "delay", "ms": 4000}
    }));
    let started = Instant::now();
    kube::Api::<k8s_openapi::api::core::v1::Secret>::namespaced(g.seed.clone(), &ns)
        .delete(secret, &Default::default())
        .await
        .unwrap();
    wait_for(&w, "the shoot's credentials replaced", async || {
        let (u, p) = shoot_credentials(&g, secret).await?;
        (p != before && w.authenticates(&u, &p, &svm).await).then_some(())
    })
    .await;
    let redelivered = started.elapsed();
    println!("seed Secret deleted → shoot has the new password: {redelivered:?}");
    assert!(
        redelivered < Duration::from_secs(15),
        "re-delivered only after {redelivered:?}, with the settling window of 60 s\n--- operator log ---\n{}",
        crate::support::tail(&w.operator.logs(), 60)
    );
    assert!(!w.authenticates(&user, &before, &svm).await);
    assert_eq!(w.mock.hits(&slow).await, 1, "the delay must fire");
}
