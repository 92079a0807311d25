//! Leader election between real operator processes sharing one Lease. The processes watch only
//! their test's namespace and OntapClusters, so that they leave the objects of the tests beside
//! them alone.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;

use crate::support::fixtures::ontap_cluster;
use crate::support::metrics::metric_sum;
use crate::support::operator::{OPERATOR_NAMESPACE, OperatorProcess, operator_identity};
use crate::support::{poll, try_poll_every};

const LEASE: Duration = Duration::from_secs(6);

fn spawn(kubeconfig: &std::path::Path, ns: &str, id: &str) -> OperatorProcess {
    spawn_with_lease(kubeconfig, ns, id, LEASE, Duration::from_secs(2))
}

fn spawn_with_lease(
    kubeconfig: &std::path::Path,
    ns: &str,
    id: &str,
    lease: Duration,
    renew_before: Duration,
) -> OperatorProcess {
    OperatorProcess::spawn(
        kubeconfig,
        &[
            &format!("--namespace={ns}"),
            &format!("--ontap-cluster-selector=ontap-test={ns}"),
            "--credentials-namespace=default",
            "--leader-elect",
            &format!("--leader-election-namespace={OPERATOR_NAMESPACE}"),
            &format!("--leader-election-id={id}"),
            &format!("--lease-duration={}s", lease.as_secs()),
            &format!("--lease-renew-before={}s", renew_before.as_secs()),
        ],
        &[],
    )
}

async fn is_leader(operator: &OperatorProcess, id: &str) -> bool {
    operator
        .metrics_text()
        .await
        .contains(&format!("leader_election_master_status{{name=\"{id}\"}} 1"))
}

/// Waits until exactly one of the operators leads, asserting on the way that never two do.
async fn single_leader(operators: &[&OperatorProcess], id: &str, timeout: Duration) -> usize {
    poll(&format!("one leader of {id}"), timeout, async || {
        let mut leaders = Vec::new();
        for (i, op) in operators.iter().enumerate() {
            if is_leader(op, id).await {
                leaders.push(i);
            }
        }
        assert!(leaders.len() <= 1, "two leaders at once: {leaders:?}");
        match leaders[..] {
            [leader] => Ok(leader),
            _ => Err("no leader".to_owned()),
        }
    })
    .await
}

/// An OntapCluster whose Secret does not exist: every reconcile of it is visible in metrics.
async fn create_cluster(client: &kube::Client, ns: &str, name: &str) {
    let clusters: kube::Api<ontap_operator::api::OntapCluster> = kube::Api::all(client.clone());
    let cluster = ontap_cluster(name)
        .endpoint("https://192.0.2.1")
        .credentials("default", "absent")
        .label("ontap-test", ns)
        .build();
    clusters
        .create(&Default::default(), &cluster)
        .await
        .unwrap();
}

/// Reconciles this process ran, by its own metrics.
async fn reconciles(operator: &OperatorProcess) -> u64 {
    metric_sum(
        &operator.metrics_text().await,
        "controller_runtime_reconcile_total",
        &[],
    ) as u64
}

#[tokio::test]
async fn a_standby_takes_over_within_one_lease_duration_when_the_leader_dies() {
    let env = crate::support::env().await;
    let kubeconfig = operator_identity(&env.client).await;
    let id = "election-crash";
    let mut a = spawn(&kubeconfig, &env.namespace, id);
    let mut b = spawn(&kubeconfig, &env.namespace, id);
    a.wait_readyz(200, Duration::from_secs(30)).await;
    b.wait_readyz(200, Duration::from_secs(30)).await;
    let leader = single_leader(&[&a, &b], id, Duration::from_secs(20)).await;
    // Something to reconcile: both processes see it, only the leader may act on it.
    create_cluster(&env.client, &env.namespace, id).await;
    // Stay a while: the standby must not grab the lease while the leader renews it.
    tokio::time::sleep(LEASE * 2).await;
    assert_eq!(
        single_leader(&[&a, &b], id, Duration::from_secs(1)).await,
        leader
    );
    let (leading, standing_by) = if leader == 0 { (&a, &b) } else { (&b, &a) };
    assert!(
        reconciles(leading).await > 0,
        "the leader reconciled nothing"
    );
    assert_eq!(reconciles(standing_by).await, 0, "the standby reconciled");

    let (dead, survivor) = if leader == 0 {
        (&mut a, &b)
    } else {
        (&mut b, &a)
    };
    dead.kill();
    let start = Instant::now();
    single_leader(&[survivor], id, LEASE * 3).await;
    let took = start.elapsed();
    // One lease duration, plus the standby's poll and the crate's up-to-1-s anti-collision pause.
    assert!(
        took <= LEASE + Duration::from_secs(2),
        "takeover took {took:?}"
    );
}

#[tokio::test]
async fn sigterm_releases_the_lease_so_a_standby_takes_over_at_once() {
    // A term far longer than a loaded machine can stretch a takeover: one that waited for the
    // Lease's expiry (or for the standby's next look at the end of the term it last read)
    // could not pass.
    const TERM: Duration = Duration::from_secs(30);
    let env = crate::support::env().await;
    let kubeconfig = operator_identity(&env.client).await;
    let id = "election-release";
    let spawn =
        |kubeconfig, ns| spawn_with_lease(kubeconfig, ns, id, TERM, Duration::from_secs(10));
    let mut a = spawn(&kubeconfig, &env.namespace);
    let mut b = spawn(&kubeconfig, &env.namespace);
    a.wait_readyz(200, Duration::from_secs(30)).await;
    b.wait_readyz(200, Duration::from_secs(30)).await;
    let leader = single_leader(&[&a, &b], id, Duration::from_secs(20)).await;
    let (stopping, survivor) = if leader == 0 {
        (&mut a, &b)
    } else {
        (&mut b, &a)
    };
    let status = stopping.terminate(Duration::from_secs(20)).await;
    assert!(
        status.success(),
        "SIGTERM should end the operator cleanly: {status:?}\n{}",
        stopping.logs()
    );
    let start = Instant::now();
    single_leader(&[survivor], id, TERM * 2).await;
    assert!(
        start.elapsed() < TERM / 3,
        "a released lease should be taken without waiting for the term to end: {:?}\n{}",
        start.elapsed(),
        crate::support::tail(&survivor.logs(), 30)
    );
}

/// A leader whose API server connection is black-holed — no error, no reset, just silence —
/// cannot renew. It must stop acting before its Lease can expire for the standby, measured from
/// the Lease's own renew time, and not hang in a read that never answers.
#[tokio::test]
async fn a_black_holed_leader_stops_before_a_standby_takes_over() {
    use crate::support::blackhole::{BlackHole, api_server};

    let env = crate::support::env().await;
    let kubeconfig = operator_identity(&env.client).await;
    let id = "election-blackhole";
    let hole = BlackHole::start(api_server(&kubeconfig)).await;
    let a = spawn(&hole.kubeconfig(&kubeconfig), &env.namespace, id);
    a.wait_readyz(200, Duration::from_secs(30)).await;
    single_leader(&[&a], id, Duration::from_secs(20)).await;
    let b = spawn(&kubeconfig, &env.namespace, id);
    b.wait_readyz(200, Duration::from_secs(30)).await;
    create_cluster(&env.client, &env.namespace, id).await;
    assert_eq!(
        single_leader(&[&a, &b], id, Duration::from_secs(1)).await,
        0
    );

    hole.cut();
    let outcome = try_poll_every(LEASE * 4, Duration::from_millis(50), async || {
        is_leader(&b, id).await.then_some(())
    })
    .await;
    assert!(outcome.is_ok(), "no takeover: {outcome:?}");
    // The two moments come from one clock, this machine's: the cut-off leader's own word that it
    // stopped, and the acquisition the standby wrote into the Lease. Polling both processes
    // instead raced with the fence's 1 s margin on a loaded machine: one slow metrics answer
    // from the leader, and the poll saw the standby lead first.
    let logs = a.logs();
    let stopped_at = logged_at(&logs, "leadership lost").unwrap_or_else(|| {
        panic!(
            "the cut-off leader never said it stopped, yet the standby took over:\n{}",
            crate::support::tail(&logs, 30)
        )
    });
    let leases: kube::Api<Lease> = kube::Api::namespaced(env.client.clone(), OPERATOR_NAMESPACE);
    let acquired_at = leases
        .get(id)
        .await
        .unwrap()
        .spec
        .and_then(|spec| spec.acquire_time)
        .expect("the Lease names no acquisition time")
        .0;
    assert!(
        stopped_at < acquired_at,
        "the cut-off leader stopped at {stopped_at}, after the standby took the Lease at {acquired_at}"
    );
}

/// When a line of the operator's text log holding `message` was written.
fn logged_at(logs: &str, message: &str) -> Option<Timestamp> {
    let line = logs.lines().find(|line| line.contains(message))?;
    // The timestamp leads the line, possibly dimmed by an ANSI escape (`ESC [ 2 m`).
    let mut plain = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(char::is_ascii_alphabetic);
        } else {
            plain.push(c);
        }
    }
    plain.split_whitespace().next()?.parse().ok()
}
