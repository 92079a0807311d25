//! `make bench`: what the identity a controller runs as costs the API server per write (issue 25,
//! target 4). The Kyma benchmark compares its run with the same writes sent bare; this says why
//! "the same writes" includes who sends them.
//!
//! The run's writes of `BENCH_IDENTITY_KYMAS` standard Kymas (default 300, 33,900 writes), sent
//! bare with one watch open (`kyma_load::watched_writes`), once with the controllers' writes and
//! the watch as the admin (in `system:masters`: the API server authorizes the group without
//! consulting RBAC, and priority and fairness lets it through as exempt) and once as the
//! operator's ServiceAccount (RBAC evaluated and the request queued by priority and fairness for
//! each), `BENCH_IDENTITY_ROUNDS` times (default 4). The order alternates (admin first, then the
//! ServiceAccount first, and so on) because each round leaves the API server's store a little
//! larger and later rounds cost a little more. Prints each round's time and the API server's CPU
//! per write, and the means.
//!
//! A binary of its own, so a control plane of its own: no operator of another benchmark may write
//! these objects. Ignored by `make test`; run with
//! `cargo test --release --test bench_identity -- --ignored --nocapture`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use operator_test_support as support;

use std::collections::BTreeMap;

use kyma_load::watched_writes;
use support::kyma::kyma_identity;
use support::{client_for, control_plane_processes, env, env_or};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: make bench"]
async fn bench_identity_cost_per_write() {
    let kymas: usize = env_or("BENCH_IDENTITY_KYMAS", 300);
    let rounds: usize = env_or("BENCH_IDENTITY_ROUNDS", 4);
    let env = env().await;
    let admin = env.client.clone();
    let service_account = client_for(&kyma_identity(&admin).await).await;
    let plane = control_plane_processes();
    assert!(
        !plane.is_empty(),
        "the API server's CPU is measured on the project's own control plane"
    );

    let mut lines = Vec::new();
    // Per identity: (seconds, API server milliseconds per write) of each round.
    let mut figures: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for round in 0..rounds {
        let mut order = [("admin", &admin), ("ServiceAccount", &service_account)];
        if round % 2 == 1 {
            order.reverse();
        }
        for (identity, controllers) in order {
            let namespace = format!("{}-{round}-{}", env.namespace, identity.to_lowercase());
            let watched = watched_writes(&admin, controllers, &namespace, kymas, &plane)
                .await
                .unwrap();
            let writes = (watched.creates + watched.other) as f64;
            let ms = watched
                .cpu
                .of("kube-apiserver")
                .map_or(f64::NAN, |cpu| cpu.as_secs_f64() * 1000.0 / writes);
            let took = watched.took.as_secs_f64();
            lines.push(format!(
                "round {round}, {identity:<14} {writes:.0} writes in {took:.1} s, the API server {ms:.3} ms per write; {}",
                watched.cpu.line()
            ));
            figures.entry(identity).or_default().push((took, ms));
        }
    }
    let mean = |identity: &str, pick: fn(&(f64, f64)) -> f64| {
        let values = &figures[identity];
        values.iter().map(pick).sum::<f64>() / values.len() as f64
    };
    let (admin_s, admin_ms) = (mean("admin", |f| f.0), mean("admin", |f| f.1));
    let (sa_s, sa_ms) = (
        mean("ServiceAccount", |f| f.0),
        mean("ServiceAccount", |f| f.1),
    );
    let mut out = vec![
        "==================== bench: the writer's identity ====================".to_owned(),
        format!("the writes of {kymas} Kymas, bare, one watch open, {rounds} rounds per identity"),
    ];
    out.extend(lines);
    out.push(format!(
        "mean                     admin {admin_s:.1} s, {admin_ms:.3} ms per write; ServiceAccount {sa_s:.1} s, {sa_ms:.3} ms per write: {:.3} x the time, {:.3} x the CPU per write",
        sa_s / admin_s,
        sa_ms / admin_ms
    ));
    out.push("======================================================================".to_owned());
    println!("{}", out.join("\n"));
}
