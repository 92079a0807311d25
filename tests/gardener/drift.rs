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
