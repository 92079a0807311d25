//! The failure-injection matrix: every ONTAP request of the create, verify and delete flows,
//! each fault action once, and the StorageVirtualMachine must still converge.
//!
//! The flows are not listed by hand: one clean create → verify → delete is recorded from the
//! mock's request log, each request is normalised to (method, path template, occurrence), and
//! every (request, action) pair becomes a case. A controller change that adds a request adds
//! its cases.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use crate::support::mock::fast_mock;
use crate::support::svm::SvmWorld;
use crate::support::{tail, try_poll};
use k8s_openapi::api::core::v1::Secret;
use mock_ontap::{FaultAction, FaultSpec, MockState};
use ontap_operator::api::StorageVirtualMachine;
use serde_json::Value;
use tokio::sync::OnceCell;

/// How long one case may take to converge: a delay beyond the client timeout plus a few
/// backed-off retries (capped at 5 s in these worlds).
const CONVERGE_WITHIN: Duration = Duration::from_secs(60);
/// The operator's ONTAP request timeout is 2 s; a delay must outlast it.
const DELAY_MS: u64 = 3_000;
/// The verify world re-verifies every SVM this often.
const SYNC_PERIOD: &str = "--sync-period=2s";
/// Every create lists the aggregates, as recorded: a list reused from the case before would leave
/// its fault unfired.
const EVERY_AGGREGATE_LIST: &str = "--ontap-aggregates-max-age=0s";

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Phase {
    Create,
    Verify,
    /// The pass after the account's password was changed behind the operator's back: the
    /// rejection confirmed, a new password set and verified.
    Rotate,
    Delete,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Create => "create",
            Phase::Verify => "verify",
            Phase::Rotate => "rotate",
            Phase::Delete => "delete",
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Action {
    Error,
    Reset,
    ApplyThenReset,
    JobFailure,
    Delay,
    /// The same error three times in a row: retries must back off and still converge.
    RepeatedError,
    /// 401, as for credentials ONTAP rejects for a moment: on the account's own verification
    /// it must not mint a new password unless a second look confirms the rejection.
    Unauthorized,
    /// A 200 whose body is a proxy's HTML page, the request not applied.
    Malformed,
    /// 403, as for a role that may not run the command for a moment: never a reason to mint a
    /// password or to give up on the object.
    Forbidden,
    /// A proxy's HTML 404 page: not ONTAP saying the object does not exist, so never taken for
    /// "already gone".
    ProxyNotFound,
    /// 400 with a code the operator does not know, as a one-off: shown as the request ONTAP
    /// refused, and tried again on a slow backoff rather than left for the sync period.
    UnknownBadRequest,
}

impl Action {
    const ALL: [Action; 11] = [
        Action::Error,
        Action::Reset,
        Action::ApplyThenReset,
        Action::JobFailure,
        Action::Delay,
        Action::RepeatedError,
        Action::Unauthorized,
        Action::Malformed,
        Action::Forbidden,
        Action::ProxyNotFound,
        Action::UnknownBadRequest,
    ];

    /// How many consecutive matching requests the fault hits.
    fn times(self) -> u64 {
        match self {
            Action::RepeatedError => 3,
            _ => 1,
        }
    }

    fn fault(self) -> FaultAction {
        let fault = match self {
            Action::Error | Action::RepeatedError => serde_json::json!({ "type": "error" }),
            Action::Unauthorized => serde_json::json!({
                "type": "error", "status": 401, "code": "6691623",
                "message": "User is not authorized"
            }),
            Action::Malformed => serde_json::json!({ "type": "malformed", "status": 200 }),
            Action::Forbidden => serde_json::json!({
                "type": "error", "status": 403, "code": "5636169",
                "message": "not authorized for that command"
            }),
            Action::ProxyNotFound => serde_json::json!({
                "type": "malformed", "status": 404,
                "body": "<html><head><title>404 Not Found</title></head><body><center><h1>404 Not Found</h1></center><hr><center>nginx</center></body></html>"
            }),
            // ONTAP's answer to a field its version does not know.
            Action::UnknownBadRequest => serde_json::json!({
                "type": "error", "status": 400, "code": "262179",
                "message": "Unexpected argument \"x\"."
            }),
            Action::Reset => serde_json::json!({ "type": "reset" }),
            Action::ApplyThenReset => serde_json::json!({ "type": "apply_then_reset" }),
            Action::JobFailure => serde_json::json!({ "type": "job_failure" }),
            Action::Delay => serde_json::json!({ "type": "delay", "ms": DELAY_MS }),
        };
        serde_json::from_value(fault).unwrap()
    }

    /// A job failure means something only for requests that start a job.
    fn applies_to(self, request: &FlowRequest) -> bool {
        self != Action::JobFailure
            || (request.template.starts_with("/api/svm/svms")
                && matches!(request.method.as_str(), "POST" | "PATCH" | "DELETE"))
    }

    fn name(self) -> &'static str {
        match self {
            Action::RepeatedError => "repeated_error",
            Action::Unauthorized => "unauthorized",
            Action::Forbidden => "forbidden",
            Action::ProxyNotFound => "proxy_not_found",
            Action::UnknownBadRequest => "unknown_bad_request",
            _ => self.fault().name(),
        }
    }
}

/// One request of a flow: the `occurrence`-th request of this method and path template.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct FlowRequest {
    method: String,
    template: String,
    occurrence: u64,
}

impl fmt::Display for FlowRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} #{}", self.method, self.template, self.occurrence)
    }
}

#[derive(Clone, Debug)]
struct Case {
    phase: Phase,
    request: FlowRequest,
    action: Action,
}

impl Case {
    fn fault(&self) -> FaultSpec {
        FaultSpec {
            method: Some(self.request.method.clone()),
            path: self.request.template.clone(),
            after: self.request.occurrence,
            times: Some(self.action.times()),
            probability: None,
            action: self.action.fault(),
        }
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} / {} / {}",
            self.phase,
            self.request,
            self.action.name()
        )
    }
}

type Flows = BTreeMap<Phase, Vec<FlowRequest>>;

/// A path with its first uuid segment and everything after it replaced by a prefix wildcard:
/// `/api/security/accounts/<uuid>/<name>` → `/api/security/accounts/*`.
fn template(path: &str) -> String {
    let is_uuid = |s: &str| {
        s.len() == 36
            && s.char_indices().all(|(i, c)| {
                if [8, 13, 18, 23].contains(&i) {
                    c == '-'
                } else {
                    c.is_ascii_hexdigit()
                }
            })
    };
    let segments: Vec<&str> = path.split('/').collect();
    match segments.iter().position(|s| is_uuid(s)) {
        Some(i) => format!("{}/*", segments[..i].join("/")),
        None => path.to_owned(),
    }
}

/// The log records of one phase as flow requests, numbered per (method, template).
fn normalise(records: &[&Value]) -> Vec<FlowRequest> {
    let mut seen: BTreeMap<(String, String), u64> = BTreeMap::new();
    records
        .iter()
        .map(|r| {
            let method = r["method"].as_str().unwrap_or_default().to_owned();
            let template = template(r["path"].as_str().unwrap_or_default());
            let n = seen.entry((method.clone(), template.clone())).or_default();
            let request = FlowRequest {
                method,
                template,
                occurrence: *n,
            };
            *n += 1;
            request
        })
        .collect()
}

/// The operator's own check of the seed credentials, which ends every provisioning pass: the
/// account reading its own record. The test's checks (`SvmWorld::authenticates`) read the SVM.
fn is_operator_verify(record: &Value, username: &str) -> bool {
    record["user"] == username
        && record["method"] == "GET"
        && record["path"]
            .as_str()
            .is_some_and(|p| p.starts_with("/api/security/accounts/"))
}

fn seq(record: &Value) -> u64 {
    record["seq"].as_u64().unwrap_or_default()
}

/// The cluster controller probes `/api/cluster` on its own schedule: no part of an SVM flow.
fn is_svm_flow(record: &Value) -> bool {
    record["path"] != "/api/cluster"
}

async fn last_seq(world: &SvmWorld) -> u64 {
    world.requests().await.last().map_or(0, seq)
}

/// Waits until the mock has seen no SVM-flow request for half a second.
async fn settle(world: &SvmWorld) -> Result<(), String> {
    let mut last = (last_seq(world).await, Instant::now());
    try_poll(Duration::from_secs(20), async || {
        let now = last_seq(world).await;
        if now != last.0 {
            last = (now, Instant::now());
        }
        if last.1.elapsed() >= Duration::from_millis(500) {
            Ok(())
        } else {
            Err(format!("requests still arriving (seq {now})"))
        }
    })
    .await
}

async fn operator_verifies_after(world: &SvmWorld, after: u64, username: &str) -> Vec<Value> {
    world
        .requests()
        .await
        .into_iter()
        .filter(|r| seq(r) > after && is_operator_verify(r, username) && r["status"] == 200)
        .collect()
}

async fn seed_username(world: &SvmWorld, name: &str) -> Result<String, String> {
    world
        .seed_credentials(&format!("{name}-svm-credentials"))
        .await
        .map(|(username, _, _)| username)
        .ok_or_else(|| "no seed Secret".to_string())
}

/// The password someone sets on the account in ONTAP behind the operator's back.
const CHANGED_BEHIND_OUR_BACK: &str = "Behind0urBack9";

/// Waits until a pass of the operator ended, then changes the account's password in ONTAP, as
/// an admin would from the CLI: the next pass finds the published credentials rejected and
/// rotates. Returns the change's place in the request log.
async fn change_password_between_passes(
    world: &SvmWorld,
    name: &str,
    username: &str,
) -> Result<u64, String> {
    let uuid = world
        .svms()
        .get(name)
        .await
        .map_err(|e| e.to_string())?
        .status
        .and_then(|s| s.uuid)
        .ok_or("no status.uuid")?;
    let now = last_seq(world).await;
    try_poll(
        Duration::from_secs(20),
        async || match operator_verifies_after(world, now, username).await.first() {
            Some(_) => Ok(()),
            None => Err("no pass ended yet".to_string()),
        },
    )
    .await?;
    let path = format!("/api/security/accounts/{uuid}/{username}");
    world
        .mock
        .as_admin(
            reqwest::Method::PATCH,
            &path,
            serde_json::json!({ "password": CHANGED_BEHIND_OUR_BACK }),
        )
        .await;
    world
        .mock
        .requests(&[("method", "PATCH"), ("path", &path)])
        .await
        .last()
        .map(seq)
        .ok_or_else(|| "the change is not in the request log".to_string())
}

/// One clean create → verify pass → password changed in ONTAP and rotated → delete, as the
/// mock saw it.
async fn record_flows() -> Flows {
    let world = SvmWorld::with(fast_mock(), &[SYNC_PERIOD, EVERY_AGGREGATE_LIST]).await;
    let start = last_seq(&world).await;
    world.create_svm("recorded", 0).await;
    world.wait_ready("recorded", CONVERGE_WITHIN).await;
    let username = seed_username(&world, "recorded").await.unwrap();
    // The provisioning pass ends with the first credential check; the next pass (a watch
    // event's or the sync period's) is a pure verification.
    let verifies = try_poll(CONVERGE_WITHIN, async || {
        let verifies = operator_verifies_after(&world, start, &username).await;
        if verifies.len() >= 2 {
            Ok(verifies)
        } else {
            Err(format!("{} passes so far", verifies.len()))
        }
    })
    .await
    .unwrap();
    let (created, verified) = (seq(&verifies[0]), seq(&verifies[1]));
    let changed = change_password_between_passes(&world, "recorded", &username)
        .await
        .unwrap();
    // The rotation pass, then the pass that verifies again once no older password request can
    // land any more: only then is the world quiet again.
    let rotated = try_poll(CONVERGE_WITHIN, async || {
        let verifies = operator_verifies_after(&world, changed, &username).await;
        match verifies.as_slice() {
            [rotation, _settled, ..] => Ok(seq(rotation)),
            _ => Err(format!("{} passes since the change", verifies.len())),
        }
    })
    .await
    .unwrap();
    settle(&world).await.unwrap();
    let before_delete = last_seq(&world).await;
    world
        .svms()
        .delete("recorded", &Default::default())
        .await
        .unwrap();
    world.wait_gone("recorded", CONVERGE_WITHIN).await;
    let log = world.requests().await;
    let phase = |from: u64, to: u64| -> Vec<FlowRequest> {
        let records: Vec<&Value> = log
            .iter()
            .filter(|r| (from + 1..=to).contains(&seq(r)) && is_svm_flow(r))
            .collect();
        normalise(&records)
    };
    Flows::from([
        (Phase::Create, phase(start, created)),
        (Phase::Verify, phase(created, verified)),
        (Phase::Rotate, phase(changed, rotated)),
        (Phase::Delete, phase(before_delete, u64::MAX)),
    ])
}

static FLOWS: OnceCell<Flows> = OnceCell::const_new();

/// The flows, recorded once per test binary by whichever test asks first.
async fn flows() -> &'static Flows {
    FLOWS.get_or_init(record_flows).await
}

fn matrix(flows: &Flows) -> Vec<Case> {
    let mut cases = Vec::new();
    for (phase, requests) in flows {
        for request in requests {
            for action in Action::ALL {
                if action.applies_to(request) {
                    cases.push(Case {
                        phase: *phase,
                        request: request.clone(),
                        action,
                    });
                }
            }
        }
    }
    cases
}

/// What one case found: whether its fault fired, and whether the SVM converged.
struct Outcome {
    case: Case,
    fired: bool,
    result: Result<(), String>,
    took: Duration,
    /// Samples that saw the object Ready with working credentials ([`ReadySampler`]).
    ready_samples: usize,
}

async fn converged(world: &SvmWorld, name: &str, index: u8) -> Result<(), String> {
    try_poll(CONVERGE_WITHIN, async || world.converged(name, index).await).await
}

/// Deletes the SVM and waits until nothing of it is left, in Kubernetes or ONTAP.
async fn delete_cleanly(world: &SvmWorld, name: &str) -> Result<(), String> {
    let svm_name = world
        .svms()
        .get_opt(name)
        .await
        .map_err(|e| e.to_string())?
        .and_then(|s| s.status)
        .and_then(|s| s.svm_name);
    world
        .svms()
        .delete(name, &Default::default())
        .await
        .map_err(|e| e.to_string())?;
    try_poll(CONVERGE_WITHIN, async || {
        if let Some(svm) = world
            .svms()
            .get_opt(name)
            .await
            .map_err(|e| e.to_string())?
        {
            return Err(format!("still there: {:?}", svm.status));
        }
        if let Some(svm_name) = &svm_name {
            world.gone_from_ontap(svm_name)?;
        }
        match world
            .secrets()
            .get_opt(&format!("{name}-svm-credentials"))
            .await
            .map_err(|e| e.to_string())?
        {
            Some(_) => Err("the seed Secret is left".into()),
            None => Ok(()),
        }
    })
    .await
}

async fn run_case(world: &SvmWorld, case: &Case, name: &str, index: u8) -> Outcome {
    let started = Instant::now();
    let mut fired = false;
    let mut sampler = None;
    let result = async {
        match case.phase {
            Phase::Create => {
                settle(world).await?;
                let mark = last_seq(world).await;
                world.mock.state().add_fault(case.fault())?;
                sampler = Some(ReadySampler::start(world, name));
                world.create_svm(name, index).await;
                let converged = converged(world, name, index).await;
                let hits = world.mock.fault_hits().await;
                fired = hits > 0;
                world.mock.state().clear_faults();
                converged?;
                outlast_late_requests(world, case, mark, hits).await?;
                delete_cleanly(world, name).await
            }
            Phase::Verify | Phase::Rotate => {
                if case.phase == Phase::Verify {
                    sampler = Some(ReadySampler::start(world, name));
                }
                world.create_svm(name, index).await;
                converged(world, name, index).await?;
                let username = seed_username(world, name).await?;
                // Inject between two passes, so the occurrence counts from a pass's start.
                let injected =
                    match case.phase {
                        Phase::Rotate => {
                            change_password_between_passes(world, name, &username).await?
                        }
                        _ => {
                            let now = last_seq(world).await;
                            try_poll(Duration::from_secs(20), async || {
                                match operator_verifies_after(world, now, &username).await.first() {
                                    Some(_) => Ok(()),
                                    None => Err("no pass ended yet".to_string()),
                                }
                            })
                            .await?;
                            last_seq(world).await
                        }
                    };
                let mark = last_seq(world).await;
                world.mock.state().add_fault(case.fault())?;
                let hit = try_poll(Duration::from_secs(20), async || {
                    if world.mock.fault_hits().await > 0 {
                        Ok(())
                    } else {
                        Err("the fault has not fired".to_string())
                    }
                })
                .await;
                fired = hit.is_ok();
                // Converged means: a later pass checked the credentials successfully, and
                // everything is as it should be.
                try_poll(CONVERGE_WITHIN, async || {
                    let log = world.requests().await;
                    let hit_at = log
                        .iter()
                        .filter(|r| seq(r) > injected && !r["fault"].is_null())
                        .map(seq)
                        .next()
                        .unwrap_or(injected);
                    if operator_verifies_after(world, hit_at, &username)
                        .await
                        .is_empty()
                    {
                        return Err("no successful pass after the fault".into());
                    }
                    world.converged(name, index).await
                })
                .await?;
                let hits = world.mock.fault_hits().await;
                world.mock.state().clear_faults();
                // Until the operator saw the change made behind its back, Ready=True with
                // rejected credentials is what it last knew; from its repair on it must hold.
                if sampler.is_none() {
                    sampler = Some(ReadySampler::start(world, name));
                }
                outlast_late_requests(world, case, mark, hits).await?;
                delete_cleanly(world, name).await
            }
            Phase::Delete => {
                sampler = Some(ReadySampler::start(world, name));
                world.create_svm(name, index).await;
                converged(world, name, index).await?;
                settle(world).await?;
                world.mock.state().add_fault(case.fault())?;
                let deleted = delete_cleanly(world, name).await;
                fired = world.mock.fault_hits().await > 0;
                world.mock.state().clear_faults();
                deleted
            }
        }
    }
    .await;
    let sampled = match sampler {
        Some(sampler) => sampler.finish().await,
        None => Ok(0),
    };
    let ready_samples = *sampled.as_ref().unwrap_or(&0);
    let result = result.and_then(|()| sampled.map(|_| ())).map_err(|e| {
        format!(
            "{e}\n--- operator log (tail) ---\n{}",
            tail(&world.operator.logs(), 40)
        )
    });
    Outcome {
        case: case.clone(),
        fired,
        result,
        took: started.elapsed(),
        ready_samples,
    }
}

/// A delayed request lands after its client gave up: the case goes on sampling until each of
/// the `hits` requests the fault delayed since `mark` has been carried out — the mock logs one
/// once it has — so that a password it sets late is caught claiming Ready.
async fn outlast_late_requests(
    world: &SvmWorld,
    case: &Case,
    mark: u64,
    hits: u64,
) -> Result<(), String> {
    if case.action != Action::Delay {
        return Ok(());
    }
    try_poll(
        Duration::from_millis(DELAY_MS) + CONVERGE_WITHIN,
        async || {
            let carried_out = world
                .requests()
                .await
                .iter()
                .filter(|r| seq(r) > mark && r["fault"]["action"] == "delay")
                .count() as u64;
            if carried_out >= hits {
                Ok(())
            } else {
                Err(format!(
                    "{carried_out} of {hits} delayed requests carried out"
                ))
            }
        },
    )
    .await
}

/// Samples an SVM object all through a case: it must never say `Ready=True` while the
/// credentials its seed Secret publishes fail against ONTAP — the outage this operator exists
/// to prevent. ONTAP is asked directly ([`MockState::accepts_svm_login`]), so the sampling
/// neither shows in the request log nor trips the case's fault.
struct ReadySampler {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<(usize, Vec<String>)>,
}

impl ReadySampler {
    fn start(world: &SvmWorld, name: &str) -> Self {
        let svms = world.svms();
        let secrets = world.secrets();
        let ontap = world.mock.state().clone();
        let name = name.to_owned();
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let (mut ready_samples, mut violations) = (0, Vec::new());
            loop {
                match ready_but_failing(&svms, &secrets, &ontap, &name).await {
                    Sample::NotReady => {}
                    Sample::ReadyAndWorking => ready_samples += 1,
                    Sample::ReadyButFailing(why) => violations.push(why),
                }
                tokio::select! {
                    _ = &mut stopped => break,
                    () = tokio::time::sleep(Duration::from_millis(20)) => {}
                }
            }
            (ready_samples, violations)
        });
        ReadySampler { stop, task }
    }

    /// How many samples saw Ready with working credentials; an error listing every sample
    /// that saw Ready with failing ones.
    async fn finish(self) -> Result<usize, String> {
        let _ = self.stop.send(());
        let (ready_samples, violations) = self.task.await.map_err(|e| e.to_string())?;
        match violations.as_slice() {
            [] => Ok(ready_samples),
            _ => Err(format!(
                "Ready=True while the seed Secret's credentials failed, {} times:\n{}",
                violations.len(),
                violations.join("\n")
            )),
        }
    }
}

enum Sample {
    NotReady,
    ReadyAndWorking,
    ReadyButFailing(String),
}

async fn ready_but_failing(
    svms: &kube::Api<StorageVirtualMachine>,
    secrets: &kube::Api<Secret>,
    ontap: &MockState,
    name: &str,
) -> Sample {
    let Ok(Some(first)) = svms.get_opt(name).await else {
        return Sample::NotReady;
    };
    // Deleting the object retires its account: the credentials stop working on purpose.
    if first.metadata.deletion_timestamp.is_some() {
        return Sample::NotReady;
    }
    let Some(status) = first.status.as_ref() else {
        return Sample::NotReady;
    };
    if !status
        .conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True")
    {
        return Sample::NotReady;
    }
    let (Some(secret_name), Some(svm_name)) = (&status.secret_ref, &status.svm_name) else {
        return Sample::ReadyButFailing("Ready without status.secretRef or svmName".into());
    };
    let Ok(secret) = secrets.get_opt(secret_name).await else {
        return Sample::NotReady;
    };
    let field = |key: &str| -> Option<String> {
        let data = secret.as_ref()?.data.as_ref()?;
        String::from_utf8(data.get(key)?.0.clone()).ok()
    };
    let works = match (field("username"), field("password"), field("svm")) {
        (Some(user), Some(password), Some(svm)) => {
            svm == *svm_name && ontap.accepts_svm_login(&user, &password, svm_name)
        }
        _ => false,
    };
    if works {
        return Sample::ReadyAndWorking;
    }
    // Only a claim that stood through the whole check counts: a status written meanwhile may
    // already have withdrawn it.
    match svms.get_opt(name).await {
        Ok(Some(again)) if again.metadata.resource_version == first.metadata.resource_version => {
            Sample::ReadyButFailing(format!(
                "status at resourceVersion {:?} says Ready; the Secret {secret_name}'s credentials for {svm_name} fail",
                first.metadata.resource_version
            ))
        }
        _ => Sample::NotReady,
    }
}

/// Runs `cases` one after another in a world of their own.
async fn run_cases(phase: Phase, action: Action, cases: Vec<Case>) -> Vec<Outcome> {
    if cases.is_empty() {
        return Vec::new();
    }
    let extra: &[&str] = match phase {
        Phase::Verify | Phase::Rotate => &[SYNC_PERIOD, EVERY_AGGREGATE_LIST],
        Phase::Create | Phase::Delete => &[EVERY_AGGREGATE_LIST],
    };
    let world = SvmWorld::with(fast_mock(), extra).await;
    let mut outcomes = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let index = u8::try_from(i % 100).unwrap();
        let name = format!("{phase}-{}-{i}", action.name().replace('_', "-"));
        let outcome = run_case(&world, case, &name, index).await;
        let failed = outcome.result.is_err();
        outcomes.push(outcome);
        if failed {
            // What is left of a failed case would fault the next one: stop this world.
            world.mock.state().clear_faults();
            break;
        }
    }
    outcomes
}

async fn run_action(action: Action) {
    let flows = flows().await;
    let all = matrix(flows);
    let mine: Vec<Case> = all.iter().filter(|c| c.action == action).cloned().collect();
    let of =
        |phase: Phase| -> Vec<Case> { mine.iter().filter(|c| c.phase == phase).cloned().collect() };
    let started = Instant::now();
    let (create, verify, rotate, delete) = tokio::join!(
        run_cases(Phase::Create, action, of(Phase::Create)),
        run_cases(Phase::Verify, action, of(Phase::Verify)),
        run_cases(Phase::Rotate, action, of(Phase::Rotate)),
        run_cases(Phase::Delete, action, of(Phase::Delete)),
    );
    let outcomes: Vec<Outcome> = create
        .into_iter()
        .chain(verify)
        .chain(rotate)
        .chain(delete)
        .collect();
    let mut report = format!(
        "{}: {} of the matrix's {} cases in {:?}\n",
        action.name(),
        mine.len(),
        all.len(),
        started.elapsed()
    );
    for o in &outcomes {
        report += &format!(
            "  {:<60} {:>6.1}s {:>4} Ready samples {}{}\n",
            o.case.to_string(),
            o.took.as_secs_f64(),
            o.ready_samples,
            if o.result.is_ok() {
                "converged"
            } else {
                "FAILED"
            },
            if o.fired { "" } else { " (fault did not fire)" }
        );
    }
    eprintln!("{report}");
    let failures: Vec<String> = outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().err().map(|e| format!("{}: {e}", o.case)))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} {} cases failed (matrix size {}):\n{}\n{report}",
        failures.len(),
        mine.len(),
        action.name(),
        all.len(),
        failures.join("\n\n")
    );
    assert_eq!(outcomes.len(), mine.len(), "every case ran:\n{report}");
    let unfired: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.fired)
        .map(|o| o.case.to_string())
        .collect();
    assert!(
        unfired.is_empty(),
        "faults that never fired (the flow took another path than recorded): {unfired:#?}\n{report}"
    );
}

#[tokio::test]
async fn the_matrix_covers_every_request_of_every_flow() {
    let flows = flows().await;
    let cases = matrix(flows);
    let mut listing = String::new();
    for (phase, requests) in flows {
        listing += &format!("{phase} ({} requests):\n", requests.len());
        for request in requests {
            listing += &format!("  {request}\n");
        }
    }
    eprintln!(
        "failure-injection matrix: {} cases ({} actions over the requests below)\n{listing}",
        cases.len(),
        Action::ALL.len()
    );
    for (phase, must) in [
        (Phase::Create, ("POST", "/api/svm/svms")),
        (Phase::Create, ("POST", "/api/network/ip/interfaces")),
        (Phase::Create, ("POST", "/api/security/accounts")),
        (Phase::Verify, ("GET", "/api/svm/svms")),
        (Phase::Rotate, ("PATCH", "/api/security/accounts/*")),
        (Phase::Delete, ("DELETE", "/api/svm/svms/*")),
    ] {
        assert!(
            flows[&phase]
                .iter()
                .any(|r| r.method == must.0 && r.template == must.1),
            "{phase} lacks {must:?} (matrix size {}):\n{listing}",
            cases.len()
        );
    }
    assert!(
        cases.len() >= 50,
        "matrix size {} is implausibly small:\n{listing}",
        cases.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_failing_with_an_error_converges() {
    run_action(Action::Error).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_reset_before_it_is_applied_converges() {
    run_action(Action::Reset).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_applied_then_reset_converges() {
    run_action(Action::ApplyThenReset).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_job_failing_converges() {
    run_action(Action::JobFailure).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_delayed_beyond_the_client_timeout_converges() {
    run_action(Action::Delay).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_failing_three_times_in_a_row_converges() {
    run_action(Action::RepeatedError).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_answered_401_converges() {
    run_action(Action::Unauthorized).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_answered_403_converges() {
    run_action(Action::Forbidden).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_answered_with_a_proxy_404_page_converges() {
    run_action(Action::ProxyNotFound).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_answered_400_with_an_unknown_code_converges() {
    run_action(Action::UnknownBadRequest).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_answered_with_a_proxy_page_converges() {
    run_action(Action::Malformed).await;
}
