//! A platform team's first hour, in order: `helm install` from the OCI registry, both replicas
//! Ready through the kubelet's probes with one leader, a Pod cut off from the API server turning
//! unready, an SVM Ready with a verified seed Secret, the leader deleted while SVMs are being
//! provisioned, `helm upgrade` to a new image tag, the PodDisruptionBudget, the runtime's security
//! context, the logs, and `helm uninstall`.

use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, EvictParams, ListParams, LogParams, PostParams};
use kube::{Client, ResourceExt};
use ontap_operator::api::OntapCluster;
use serde_json::Value;

use crate::release::{NAMESPACE, ONE_RELEASE, RELEASE, SELECTOR, is_ready, rolled_out, shipped};
use crate::runtime::{mount_options, pod_processes, status_field};
use crate::support::fixtures::svm;
use crate::support::mock::{Mock, fast_mock};
use crate::support::svm::{Tenant, converged, no_orphans};
use crate::support::{create_namespace, gone, poll};

const TIMEOUT: Duration = Duration::from_secs(120);
const TENANT: &str = "team-a";

#[tokio::test]
async fn the_chart_as_a_platform_team_installs_runs_and_removes_it() {
    let _turn = ONE_RELEASE.lock().await;
    let shipped = shipped();
    let client = shipped.client().await;
    // Jobs long enough that SVMs are still being provisioned when the leader goes.
    let mut config = fast_mock();
    config.settings.job_duration_ms = 1500;
    let mock = Mock::start_tls_on(config, shipped.node.address).await;
    let mut values = shipped.values(&mock);
    shipped.install(&values);

    let image = format!("{}:{}", shipped.repository, shipped.tag);
    let pods = rolled_out(&client, &image, 2, TIMEOUT).await;
    let leader = leader(&client, &pods).await;

    readiness_follows_the_api_server(&client, &pods, &leader).await;

    create_namespace(&client, TENANT, serde_json::json!({})).await;
    let tenant = Tenant {
        svms: Api::namespaced(client.clone(), TENANT),
        secrets: Api::namespaced(client.clone(), TENANT),
        mock: &mock,
    };
    create_svms(&tenant, 0..1).await;
    all_converge(&tenant, 0..1).await;

    // The leader deleted while SVMs are being provisioned.
    create_svms(&tenant, 1..7).await;
    poll("an SVM job under way", TIMEOUT, async || {
        let jobs = mock.snapshot()["jobs"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        jobs.iter().any(|j| j["state"] == "running").then_some(())
    })
    .await;
    let lease = lease(&client).await;
    let lease_duration =
        Duration::from_secs(lease.spec.as_ref().unwrap().lease_duration_seconds.unwrap() as u64);
    let deleted = Instant::now();
    Api::<Pod>::namespaced(client.clone(), NAMESPACE)
        .delete(&leader, &DeleteParams::default())
        .await
        .unwrap();
    let successor = poll("another Pod leading", TIMEOUT, async || {
        let holder = holder(&lease_of(&client).await?)?;
        if holder.starts_with(&format!("{leader}_")) {
            Err(format!("{holder} still leads"))
        } else {
            Ok(holder)
        }
    })
    .await;
    let takeover = deleted.elapsed();
    assert!(
        takeover <= lease_duration + Duration::from_secs(5),
        "{successor} took over after {takeover:?}; the Lease lasts {lease_duration:?}"
    );
    all_converge(&tenant, 0..7).await;

    // An upgrade while more SVMs arrive: a rolling update, guarded by the chart's PDB.
    create_svms(&tenant, 7..10).await;
    values["image"]["tag"] = Value::from(shipped.next_tag.clone());
    shipped.upgrade(&values);
    let next_image = format!("{}:{}", shipped.repository, shipped.next_tag);
    let pods = rolled_out(&client, &next_image, 2, TIMEOUT).await;
    all_converge(&tenant, 0..10).await;
    let creates = mock
        .requests(&[("method", "POST"), ("path", "/api/svm/svms")])
        .await;
    assert_eq!(
        creates.len(),
        10,
        "one SVM create per object, none lost and none doubled: {creates:#?}"
    );
    no_orphans(&mock.snapshot()).unwrap();

    the_budget_holds_one_pod(&client, &pods).await;
    let pods = rolled_out(&client, &next_image, 2, TIMEOUT).await;
    the_runtime_enforces_the_security_context(&pods);
    logs_are_structured_and_hold_no_secret(&client, &pods, &tenant, &mock).await;

    // The documented order: the SVMs while the operator still runs (it removes them from ONTAP),
    // the clusters, whose finalizer keeps them while SVMs use them, then the release.
    tenant
        .svms
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .unwrap();
    poll(
        "every SVM gone from ONTAP and the API",
        TIMEOUT,
        async || {
            let left = tenant
                .svms
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .len();
            let in_ontap = mock.snapshot()["svms"].as_array().map_or(0, Vec::len);
            (left == 0 && in_ontap == 0).then_some(())
        },
    )
    .await;
    let clusters: Api<OntapCluster> = Api::all(client.clone());
    clusters
        .delete("lab", &DeleteParams::default())
        .await
        .unwrap();
    gone(&clusters, "lab", TIMEOUT).await.unwrap();
    shipped.uninstall();
    nothing_left_but_the_crds(&client).await;
}

async fn lease_of(client: &Client) -> Result<Lease, String> {
    Api::<Lease>::namespaced(client.clone(), NAMESPACE)
        .get(RELEASE)
        .await
        .map_err(|e| e.to_string())
}

async fn lease(client: &Client) -> Lease {
    poll("the leader Lease", TIMEOUT, async || lease_of(client).await).await
}

fn holder(lease: &Lease) -> Result<String, String> {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.clone())
        .filter(|h| !h.is_empty())
        .ok_or_else(|| "no holder".to_owned())
}

/// The Pod holding the Lease: exactly one of `pods`.
async fn leader(client: &Client, pods: &[Pod]) -> String {
    poll("one leader among the Pods", TIMEOUT, async || {
        let holder = holder(&lease_of(client).await?)?;
        let leading: Vec<String> = pods
            .iter()
            .map(ResourceExt::name_any)
            .filter(|name| holder.starts_with(&format!("{name}_")))
            .collect();
        match &leading[..] {
            [one] => Ok(one.clone()),
            _ => Err(format!("holder {holder} is not one of the Pods")),
        }
    })
    .await
}

/// The standby cut off from the API server: its `/readyz` fails the kubelet's probe, the Pod
/// turns unready and its Service endpoint stops being ready; reconnected, it is Ready again.
async fn readiness_follows_the_api_server(client: &Client, pods: &[Pod], leader: &str) {
    let standby = pods.iter().find(|p| p.name_any() != leader).unwrap();
    let name = standby.name_any();
    let ip = standby.status.clone().unwrap().pod_ip.unwrap();
    let cut = ApiServerCut::new(&shipped().node.kubeconfig, &ip);
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    poll(
        &format!("{name} unready while cut off"),
        TIMEOUT,
        async || {
            let pod = pods_api.get(&name).await.ok()?;
            (!is_ready(&pod)).then_some(())
        },
    )
    .await;
    poll(
        &format!("{name}'s endpoint not ready"),
        TIMEOUT,
        async || {
            endpoint_ready(client, &ip)
                .await
                .map(|ready| !ready)
                .filter(|&r| r)
        },
    )
    .await;
    drop(cut);
    poll(&format!("{name} Ready again"), TIMEOUT, async || {
        let pod = pods_api.get(&name).await.ok()?;
        is_ready(&pod).then_some(())
    })
    .await;
    poll(
        &format!("{name}'s endpoint ready again"),
        TIMEOUT,
        async || endpoint_ready(client, &ip).await.filter(|&r| r),
    )
    .await;
}

/// Whether the operator's Service lists `ip` as a ready endpoint (`None`: not listed at all).
async fn endpoint_ready(client: &Client, ip: &str) -> Option<bool> {
    let slices = Api::<EndpointSlice>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default().labels("kubernetes.io/service-name=ontap-operator-metrics"))
        .await
        .ok()?;
    slices
        .items
        .iter()
        .flat_map(|s| &s.endpoints)
        .find(|e| e.addresses.iter().any(|a| a == ip))
        .map(|e| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(false))
}

/// Drops the Pod's packets to the API server on the host while it lives.
struct ApiServerCut {
    rule: Vec<String>,
}

impl ApiServerCut {
    fn new(kubeconfig: &std::path::Path, pod_ip: &str) -> Self {
        let server = crate::support::blackhole::api_server(kubeconfig);
        let rule: Vec<String> = [
            "INPUT",
            "-s",
            pod_ip,
            "-d",
            &server.ip().to_string(),
            "-p",
            "tcp",
            "--dport",
            &server.port().to_string(),
            "-m",
            "comment",
            "--comment",
            "ontap-operator-test",
            "-j",
            "DROP",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        iptables("-I", &rule);
        Self { rule }
    }
}

impl Drop for ApiServerCut {
    fn drop(&mut self) {
        iptables("-D", &self.rule);
    }
}

fn iptables(action: &str, rule: &[String]) {
    let status = Command::new("iptables")
        .args(["-w", action])
        .args(rule)
        .status()
        .unwrap();
    assert!(status.success(), "iptables {action} {rule:?}: {status}");
}

async fn create_svms(tenant: &Tenant<'_>, indexes: std::ops::Range<u8>) {
    for i in indexes {
        tenant
            .svms
            .create(&PostParams::default(), &fixture(i).build())
            .await
            .unwrap();
    }
}

fn fixture(index: u8) -> crate::support::fixtures::SvmFixture {
    svm(&format!("svm-{index}"))
        .cluster("lab")
        .nfs()
        .index(index)
}

async fn all_converge(tenant: &Tenant<'_>, indexes: std::ops::Range<u8>) {
    for i in indexes {
        let name = format!("svm-{i}");
        poll(&format!("{name} converged"), TIMEOUT, async || {
            converged(tenant, &name, &fixture(i)).await
        })
        .await;
    }
}

/// With two Pods Ready, the PDB lets one be evicted and refuses the second.
async fn the_budget_holds_one_pod(client: &Client, pods: &[Pod]) {
    let budget = Api::<PodDisruptionBudget>::namespaced(client.clone(), NAMESPACE);
    poll("the PDB allows one disruption", TIMEOUT, async || {
        let pdb = budget.get(RELEASE).await.ok()?;
        (pdb.status?.disruptions_allowed == 1).then_some(())
    })
    .await;
    let pods_api: Api<Pod> = Api::namespaced(shipped().client_without_retries().await, NAMESPACE);
    pods_api
        .evict(&pods[0].name_any(), &EvictParams::default())
        .await
        .unwrap();
    let refused = pods_api
        .evict(&pods[1].name_any(), &EvictParams::default())
        .await
        .expect_err("the second eviction must be refused by the PDB");
    assert!(
        matches!(&refused, kube::Error::Api(e) if e.code == 429),
        "{refused}"
    );
}

/// What the runtime enforces on the operator's processes, read from the host's /proc.
fn the_runtime_enforces_the_security_context(pods: &[Pod]) {
    for pod in pods {
        let uid = pod.metadata.uid.clone().unwrap();
        let processes = pod_processes(&uid);
        assert!(
            !processes.is_empty(),
            "no process of {} on the host",
            pod.name_any()
        );
        for pid in processes {
            let what = format!("{} (pid {pid})", pod.name_any());
            assert!(
                status_field(pid, "Uid")
                    .split_whitespace()
                    .all(|u| u == "65532"),
                "{what} runs as {}",
                status_field(pid, "Uid")
            );
            assert!(
                status_field(pid, "Gid")
                    .split_whitespace()
                    .all(|g| g == "65532")
            );
            assert_eq!(
                status_field(pid, "NoNewPrivs"),
                "1",
                "{what} may gain privileges"
            );
            assert_eq!(
                status_field(pid, "Seccomp"),
                "2",
                "{what} runs without a seccomp filter"
            );
            for caps in ["CapEff", "CapPrm", "CapBnd"] {
                assert_eq!(status_field(pid, caps), "0000000000000000", "{what} {caps}");
            }
            let root = mount_options(pid, "/").unwrap();
            assert!(
                root.split(',').any(|o| o == "ro"),
                "{what}'s root file system is mounted {root}"
            );
        }
    }
}

/// Every log line is a JSON object with a level and a message, and none holds ONTAP's admin
/// password or a seed Secret's.
async fn logs_are_structured_and_hold_no_secret(
    client: &Client,
    pods: &[Pod],
    tenant: &Tenant<'_>,
    mock: &Mock,
) {
    let mut secrets = vec![mock.server.admin().password.clone()];
    for secret in tenant.secrets.list(&ListParams::default()).await.unwrap() {
        if let Some(password) = secret.data.as_ref().and_then(|d| d.get("password")) {
            secrets.push(String::from_utf8(password.0.clone()).unwrap());
        }
    }
    assert!(secrets.len() > 1, "no seed Secret to look for");
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    for pod in pods {
        let logs = pods_api
            .logs(&pod.name_any(), &LogParams::default())
            .await
            .unwrap();
        assert!(!logs.is_empty(), "{} logged nothing", pod.name_any());
        for line in logs.lines().filter(|l| !l.trim().is_empty()) {
            let record: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {line}", pod.name_any()));
            assert!(
                record["level"].is_string() && record["timestamp"].is_string(),
                "{line}"
            );
            for secret in &secrets {
                assert!(
                    !line.contains(secret.as_str()),
                    "a secret in the log: {line}"
                );
            }
        }
    }
}

/// After `helm uninstall`: the operator's namespace, Deployment, RBAC and Lease are gone; its
/// CRDs stay, as helm leaves CRDs.
async fn nothing_left_but_the_crds(client: &Client) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    gone(&namespaces, NAMESPACE, TIMEOUT).await.unwrap();
    let selector = ListParams::default().labels(SELECTOR);
    let roles = Api::<ClusterRole>::all(client.clone())
        .list(&selector)
        .await
        .unwrap();
    let bindings = Api::<ClusterRoleBinding>::all(client.clone())
        .list(&selector)
        .await
        .unwrap();
    let left: Vec<String> = roles
        .iter()
        .map(|r| format!("ClusterRole {}", r.name_any()))
        .chain(
            bindings
                .iter()
                .map(|b| format!("ClusterRoleBinding {}", b.name_any())),
        )
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let named: Vec<String> = Api::<ClusterRole>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .iter()
        .map(ResourceExt::name_any)
        .filter(|n| n.starts_with("ontap-operator"))
        .collect();
    assert!(named.is_empty(), "ClusterRoles left behind: {named:?}");
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    for crd in [
        "storagevirtualmachines.ontap.storage.dev",
        "ontapclusters.ontap.storage.dev",
    ] {
        assert!(
            crds.get_opt(crd).await.unwrap().is_some(),
            "helm removed the CRD {crd}"
        );
    }
}
