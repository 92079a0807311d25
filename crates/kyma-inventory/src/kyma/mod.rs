//! The Kyma controller: one HelmComponent `<kyma>-<component>` per listed component, owned by
//! the Kyma (controller owner reference), found through the shared HelmComponent cache's owner
//! index — never by listing or scanning. The status says `reconciling` with the components not
//! yet at `success` in `waitingFor`, or `success`; children no longer listed are deleted, and so
//! are all children when the Kyma is deleted (through the finalizer: the test control plane, like
//! any cluster without kube-controller-manager, has no garbage collector).
//!
//! Writes are what the scale benchmark counts: a child is created once (creates whose watch
//! event has not arrived yet are remembered, so a pass woken by a sibling's event does not post
//! them again), and `waitingFor` is refreshed once while the status stays `reconciling`, at its
//! first change a progress interval or more after `reconciling` was written — `reconciling` and
//! `success` themselves are written at once. So a Kyma writes its status three times however long
//! it waits: a thousand Kymas created at once take several lifecycles, and a refresh every
//! interval would cost each of them one write per interval. A change of the listed components
//! is written at once.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client, CustomResourceExt, Resource, ResourceExt};

use super::component::Lifecycle;
use super::render::CHART_VERSION;
use crate::api::{
    HelmComponent, HelmComponentSpec, HelmComponentState, Kyma, KymaCluster, KymaState, KymaStatus,
};
use reconcile_engine::{
    Halt, Manager, ManagerError, Outcome, Reconciler, Registration, SharedCache, StepError,
    StepRunner, Wait,
};

reconcile_engine::steps! {
    /// The steps of the Kyma controller.
    pub enum KymaStep {
        /// Every listed component has its HelmComponent, with the spec the Kyma implies.
        ComponentsCreated,
        /// No HelmComponent of a component no longer listed remains.
        UnlistedDeleted,
        /// Every component reached `success`.
        ComponentsSucceeded,
        /// Cleanup: every HelmComponent of the Kyma is gone.
        ComponentsDeleted,
    }
}

/// The controller's name: its metrics label, queue name and Events' reporter.
pub const CONTROLLER: &str = "kyma";

/// Keeps a Kyma until its HelmComponents are deleted.
pub const FINALIZER: &str = "inventory.kyma-project.io/components";

/// Creates and deletes of one pass sent at once.
const PARALLEL_WRITES: usize = 8;

/// How long a create or delete whose watch event has not arrived is trusted: far beyond a
/// watch's usual lag, short enough that a lost event costs one late repair, not a stuck object.
const EXPECTATION_TTL: Duration = Duration::from_secs(60);

/// How often a deleting Kyma looks again at children that are still there (their deletion
/// events also wake it).
const DELETE_RECHECK: Duration = Duration::from_secs(5);

/// Reason of `ComponentsSucceeded` while components install.
pub const WAITING_REASON: &str = "ComponentsInstalling";

/// Registers the Kyma controller; the Cluster kind's CRD comes with it.
pub fn register(
    manager: &mut Manager,
    client: Client,
    lifecycle: Lifecycle,
    progress_interval: Duration,
) -> Result<(), ManagerError> {
    let components = manager.cache::<HelmComponent>()?;
    manager.register(
        Registration::new(
            CONTROLLER,
            KymaReconciler {
                client,
                components,
                expected: Expectations::default(),
                progress: Progress::new(lifecycle.scaled(progress_interval.as_secs_f64())),
            },
        )
        // Thousands of Kymas, each read by its own pass only.
        .packed()
        .crd(Kyma::crd())
        .crd(KymaCluster::crd())
        .owns_when::<HelmComponent>(
            watcher::Config::default(),
            &["create", "patch", "delete"],
            wakes_kyma,
        ),
    )
}

/// Whether a HelmComponent's change can change what its Kyma does or reports. A Kyma creates
/// and repairs its children's specs and reports which of them are not at `success`; the four
/// states before `success` look the same to it. Without this filter every one of a child's five
/// status writes woke its Kyma, and each pass read all 18 children: 63 passes per Kyma in the
/// 1,000-Kyma run, most of which changed nothing. Woken: a child's creation (no state yet), its
/// `success`, a spec its controller has not seen yet (someone edited it: the Kyma repairs it),
/// its deletion. The HelmComponent controller never takes a child out of `success`; a status
/// written by someone else that does is seen at the Kyma's next pass (at the latest its
/// periodic resync), as the HelmComponent controller itself sees it only then.
pub fn wakes_kyma(child: &HelmComponent) -> bool {
    let Some(status) = child.status.as_ref() else {
        return true;
    };
    matches!(status.status, None | Some(HelmComponentState::Success))
        || status.observed_generation != child.metadata.generation
        || child.metadata.deletion_timestamp.is_some()
}

pub struct KymaReconciler {
    client: Client,
    components: SharedCache<HelmComponent>,
    expected: Expectations,
    progress: Progress,
}

mod memory;

use memory::{Expectations, Expected, Progress, key};

/// The HelmComponent a Kyma implies for one of its components (public for the load driver,
/// whose bare-writes probe sends the controller's own create bodies).
pub fn desired_child(kyma: &Kyma, name: &str, namespace: Option<&str>) -> HelmComponent {
    HelmComponent {
        metadata: ObjectMeta {
            name: Some(child_name(kyma, name)),
            namespace: kyma.namespace(),
            owner_references: kyma.controller_owner_ref(&()).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        spec: child_spec(name, namespace),
        status: None,
    }
}

/// The spec of the child for component `name` installed into `namespace`.
pub fn child_spec(name: &str, namespace: Option<&str>) -> HelmComponentSpec {
    HelmComponentSpec {
        component_name: name.to_owned(),
        chart_location: Some(name.to_owned()),
        version: Some(CHART_VERSION.to_owned()),
        namespace: namespace.map(str::to_owned),
    }
}

/// `<kyma>-<component>`.
pub fn child_name(kyma: &Kyma, component: &str) -> String {
    format!("{}-{component}", kyma.name_any())
}

fn ns_name(obj: &HelmComponent) -> String {
    format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any())
}

fn is_controlled_by(child: &HelmComponent, uid: &str) -> bool {
    child
        .owner_references()
        .iter()
        .any(|o| o.controller == Some(true) && o.uid == uid)
}

impl KymaReconciler {
    fn api(&self, kyma: &Kyma) -> Api<HelmComponent> {
        Api::namespaced(self.client.clone(), &kyma.namespace().unwrap_or_default())
    }

    /// The Kyma's children in the cache, by name.
    fn children(&self, kyma: &Kyma) -> HashMap<String, Arc<HelmComponent>> {
        let uid = kyma.uid().unwrap_or_default();
        self.components
            .children_of(&uid)
            .into_iter()
            .filter(|c| is_controlled_by(c, &uid))
            .map(|c| (c.name_any(), c))
            .collect()
    }

    async fn create(
        &self,
        api: &Api<HelmComponent>,
        kyma: &Kyma,
        child: HelmComponent,
    ) -> Result<bool, StepError> {
        let name = child.name_any();
        let full = ns_name(&child);
        let params = PostParams {
            field_manager: Some(CONTROLLER.to_owned()),
            ..PostParams::default()
        };
        match api.create(&params, &child).await {
            Ok(_) => {
                self.expected.expect(&full, Expected::Created);
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                // Ours and not cached yet, or someone else's object of that name.
                let existing = api.get(&name).await?;
                let uid = kyma.uid().unwrap_or_default();
                if is_controlled_by(&existing, &uid) {
                    Ok(false)
                } else {
                    Err(StepError::conflict(
                        "ComponentNameTaken",
                        format!("a HelmComponent {name} exists that this Kyma does not own"),
                    ))
                }
            }
            Err(e) => Err(StepError::from_kube("CreateFailed", e)),
        }
    }

    async fn delete(
        &self,
        api: &Api<HelmComponent>,
        child: &HelmComponent,
    ) -> Result<(), StepError> {
        let full = ns_name(child);
        let params = DeleteParams {
            // Only the object we looked at: a newer one of the same name is not ours to judge.
            preconditions: child.uid().map(|uid| kube::api::Preconditions {
                uid: Some(uid),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&child.name_any(), &params).await {
            Ok(_) => {
                self.expected.expect(&full, Expected::Deleted);
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {
                self.expected.forget(&full);
                Ok(())
            }
            Err(e) => Err(StepError::from_kube("DeleteFailed", e)),
        }
    }

    /// Deletes `children`, a few at a time; the first error wins.
    async fn delete_all(
        &self,
        api: &Api<HelmComponent>,
        children: Vec<Arc<HelmComponent>>,
    ) -> Result<usize, StepError> {
        let todo: Vec<_> = children
            .into_iter()
            .filter(|c| c.metadata.deletion_timestamp.is_none())
            .filter(|c| !self.expected.pending(&ns_name(c), Expected::Deleted, true))
            .collect();
        let n = todo.len();
        let results: Vec<Result<(), StepError>> = futures::stream::iter(todo)
            .map(|c| async move { self.delete(api, &c).await })
            .buffer_unordered(PARALLEL_WRITES)
            .collect()
            .await;
        results.into_iter().collect::<Result<Vec<()>, _>>()?;
        Ok(n)
    }

    /// The steps that make the children what the spec lists: missing ones created, changed
    /// ones repaired, unlisted ones deleted.
    async fn children_match_spec(
        &self,
        kyma: &Kyma,
        api: &Api<HelmComponent>,
        children: &HashMap<String, Arc<HelmComponent>>,
        listed: &HashSet<String>,
        steps: &mut StepRunner<KymaStep>,
    ) -> Result<(), Halt> {
        steps
            .step(KymaStep::ComponentsCreated, || async {
                let mut creates = Vec::new();
                let mut repairs = Vec::new();
                for component in &kyma.spec.components {
                    let desired =
                        desired_child(kyma, &component.name, component.namespace.as_deref());
                    let name = desired.name_any();
                    if name.len() > 253 {
                        return Err(StepError::invalid(
                            "NameTooLong",
                            format!("the HelmComponent name {name} is longer than 253 characters"),
                        )
                        .into());
                    }
                    match children.get(&name) {
                        Some(child) => {
                            self.expected.forget(&ns_name(child));
                            if child.spec != desired.spec
                                && child.metadata.deletion_timestamp.is_none()
                            {
                                repairs.push(desired);
                            }
                        }
                        None if self.expected.pending(
                            &ns_name(&desired),
                            Expected::Created,
                            false,
                        ) => {}
                        None => creates.push(desired),
                    }
                }
                if creates.is_empty() && repairs.is_empty() {
                    return Ok(Outcome::unchanged());
                }
                let created: Vec<Result<bool, StepError>> = futures::stream::iter(creates)
                    .map(|child| self.create(api, kyma, child))
                    .buffer_unordered(PARALLEL_WRITES)
                    .collect()
                    .await;
                created.into_iter().collect::<Result<Vec<bool>, _>>()?;
                for desired in repairs {
                    let patch = serde_json::json!({ "spec": desired.spec });
                    api.patch(
                        &desired.name_any(),
                        &PatchParams {
                            field_manager: Some(CONTROLLER.to_owned()),
                            ..PatchParams::default()
                        },
                        &Patch::Merge(&patch),
                    )
                    .await
                    .map_err(|e| StepError::from_kube("UpdateFailed", e))?;
                }
                Ok(Outcome::changed())
            })
            .await?;

        steps
            .step(KymaStep::UnlistedDeleted, || async {
                let unlisted: Vec<Arc<HelmComponent>> = children
                    .values()
                    .filter(|c| !listed.contains(&c.name_any()))
                    .cloned()
                    .collect();
                if self.delete_all(api, unlisted).await? == 0 {
                    return Ok(Outcome::unchanged());
                }
                Ok(Outcome::changed())
            })
            .await?;
        Ok(())
    }
}

/// Sets `status` to `reconciling` while `waiting_for` names components, else `success`.
fn set_waiting(status: &mut KymaStatus, waiting_for: Vec<String>) {
    status.status = Some(if waiting_for.is_empty() {
        KymaState::Success
    } else {
        KymaState::Reconciling
    });
    status.waiting_for = waiting_for;
}

impl Reconciler for KymaReconciler {
    type Resource = Kyma;
    type Step = KymaStep;
    const FINALIZER: Option<&'static str> = Some(FINALIZER);

    async fn reconcile(
        &self,
        kyma: &Kyma,
        status: &mut KymaStatus,
        steps: &mut StepRunner<KymaStep>,
    ) -> Result<(), Halt> {
        let api = self.api(kyma);
        let children = self.children(kyma);
        let listed: HashSet<String> = kyma
            .spec
            .components
            .iter()
            .map(|c| child_name(kyma, &c.name))
            .collect();

        // The status says what the Kyma waits for before any step runs: a pass that fails (a
        // child's name taken by another object, a create refused) still reports `reconciling`
        // and the components it cannot finish, instead of leaving the status empty.
        let waiting: Vec<String> = kyma
            .spec
            .components
            .iter()
            .filter(|c| {
                children
                    .get(&child_name(kyma, &c.name))
                    .and_then(|child| child.status.as_ref())
                    .and_then(|s| s.status)
                    != Some(HelmComponentState::Success)
            })
            .map(|c| c.name.clone())
            .collect();
        let kyma_key = key(&kyma.uid().unwrap_or_default());
        let components: Vec<&str> = kyma
            .spec
            .components
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        let (waiting_for, refresh) = self.progress.show(
            kyma_key,
            status,
            waiting.clone(),
            &components,
            Instant::now(),
        );
        let held_back = waiting_for != waiting;
        set_waiting(status, waiting_for);

        let children_done = self
            .children_match_spec(kyma, &api, &children, &listed, steps)
            .await;
        if let Err(halt) = children_done {
            if held_back {
                // A failing pass writes its status anyway (the halt's attempts change): holding
                // `waitingFor` back saves no write and would leave it stale for the whole
                // backoff.
                self.progress.written_now(kyma_key, Instant::now());
                set_waiting(status, waiting);
            }
            return Err(halt);
        }

        steps
            .step(KymaStep::ComponentsSucceeded, || async {
                if status.waiting_for.is_empty() {
                    return Ok(Outcome::unchanged());
                }
                // The children's status events wake the Kyma; the refresh of a held-back
                // `waitingFor` is the only timer needed.
                Err(Wait::new(
                    WAITING_REASON,
                    "waiting for components to reach success (see status.waitingFor)",
                    refresh.unwrap_or(Duration::from_secs(3600)),
                )
                .into())
            })
            .await
    }

    async fn cleanup(
        &self,
        kyma: &Kyma,
        _status: &mut KymaStatus,
        steps: &mut StepRunner<KymaStep>,
    ) -> Result<(), Halt> {
        let api = self.api(kyma);
        steps
            .step(KymaStep::ComponentsDeleted, || async {
                let children: Vec<Arc<HelmComponent>> = self.children(kyma).into_values().collect();
                if children.is_empty() {
                    return Ok(Outcome::unchanged());
                }
                let n = children.len();
                self.delete_all(&api, children).await?;
                Err(Wait::new(
                    "ComponentsDeleting",
                    format!("{n} HelmComponent(s) of this Kyma are being deleted"),
                    DELETE_RECHECK,
                )
                .into())
            })
            .await
    }

    fn forget(&self, kyma: &Kyma) {
        self.progress.forget(key(&kyma.uid().unwrap_or_default()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reconciling(waiting: &[&str]) -> KymaStatus {
        KymaStatus {
            status: Some(KymaState::Reconciling),
            waiting_for: waiting.iter().map(|c| (*c).to_owned()).collect(),
            ..KymaStatus::default()
        }
    }

    fn list(names: &[&str]) -> Vec<String> {
        names.iter().map(|c| (*c).to_owned()).collect()
    }

    /// The components the Kyma of these tests lists.
    const LISTED: [&str; 5] = ["a", "b", "c", "d", "new"];

    #[test]
    fn waiting_for_is_refreshed_once_between_reconciling_and_success() {
        let interval = Duration::from_secs(40);
        let progress = Progress::new(interval);
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let show = |status: &KymaStatus, computed: &[&str], s: u64| {
            progress.show(1, status, list(computed), &LISTED, at(s))
        };

        // The first pass writes reconciling with everything.
        let (shown, refresh) = show(&KymaStatus::default(), &["a", "b", "c", "d"], 0);
        assert_eq!((shown, refresh), (list(&["a", "b", "c", "d"]), None));
        let status = reconciling(&["a", "b", "c", "d"]);

        // A component done within the interval: held back until the interval is over.
        let (shown, refresh) = show(&status, &["b", "c", "d"], 10);
        assert_eq!(shown, list(&["a", "b", "c", "d"]));
        assert_eq!(refresh, Some(Duration::from_secs(30)));

        // After it: the one refresh.
        let (shown, refresh) = show(&status, &["c", "d"], 45);
        assert_eq!((shown, refresh), (list(&["c", "d"]), None));
        let status = reconciling(&["c", "d"]);

        // Later changes wait for success, however long it takes: three writes in all.
        for later in [90, 400, 4000] {
            let (shown, refresh) = show(&status, &["d"], later);
            assert_eq!((shown, refresh), (list(&["c", "d"]), None), "at {later} s");
        }
        let (shown, _) = show(&status, &[], 4001);
        assert!(shown.is_empty(), "success is written at once");
    }

    #[test]
    fn a_change_of_the_listed_components_is_shown_at_once() {
        let progress = Progress::new(Duration::from_secs(40));
        let t0 = Instant::now();
        let soon = t0 + Duration::from_secs(1);
        progress.show(1, &KymaStatus::default(), list(&["a", "b"]), &LISTED, t0);
        let (shown, refresh) = progress.show(
            1,
            &reconciling(&["a", "b"]),
            list(&["a", "b", "new"]),
            &LISTED,
            soon,
        );
        assert_eq!((shown, refresh), (list(&["a", "b", "new"]), None), "added");
        let (shown, refresh) = progress.show(
            1,
            &reconciling(&["a", "b", "new"]),
            list(&["a", "b"]),
            &["a", "b"],
            soon,
        );
        assert_eq!((shown, refresh), (list(&["a", "b"]), None), "removed");
    }

    #[test]
    fn a_kyma_reconciling_since_before_a_restart_gets_its_refresh_at_once() {
        let progress = Progress::new(Duration::from_secs(40));
        let t0 = Instant::now();
        let (shown, _) = progress.show(
            7,
            &reconciling(&["a", "b", "c"]),
            list(&["b", "c"]),
            &LISTED,
            t0,
        );
        assert_eq!(shown, list(&["b", "c"]), "the refresh, at once");
        let later = t0 + Duration::from_secs(100);
        let (shown, refresh) =
            progress.show(7, &reconciling(&["b", "c"]), list(&["c"]), &LISTED, later);
        assert_eq!((shown, refresh), (list(&["b", "c"]), None), "and only once");
    }

    #[test]
    fn a_child_wakes_its_kyma_when_it_is_new_succeeds_changes_spec_or_goes() {
        let child = |state: Option<HelmComponentState>, generation: i64, observed: i64| {
            let mut c = HelmComponent::new("k-ory", child_spec("ory", None));
            c.metadata.generation = Some(generation);
            c.status = Some(crate::api::HelmComponentStatus {
                status: state,
                observed_generation: Some(observed),
                ..Default::default()
            });
            c
        };
        let created = HelmComponent::new("k-ory", child_spec("ory", None));
        assert!(wakes_kyma(&created), "no status yet");
        for state in [
            HelmComponentState::Pending,
            HelmComponentState::Started,
            HelmComponentState::Failing,
            HelmComponentState::Retrying,
        ] {
            assert!(!wakes_kyma(&child(Some(state), 1, 1)), "{state:?}");
        }
        assert!(wakes_kyma(&child(Some(HelmComponentState::Success), 1, 1)));
        assert!(wakes_kyma(&child(None, 1, 1)), "a status without a state");
        assert!(
            wakes_kyma(&child(Some(HelmComponentState::Started), 2, 1)),
            "a spec its controller has not seen"
        );
        let mut going = child(Some(HelmComponentState::Started), 1, 1);
        going.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::now(),
            ));
        assert!(wakes_kyma(&going), "being deleted");
    }

    #[test]
    fn expectations_hold_until_the_cache_catches_up() {
        let e = Expectations::default();
        assert!(!e.pending("ns/a", Expected::Created, false));
        e.expect("ns/a", Expected::Created);
        assert!(
            e.pending("ns/a", Expected::Created, false),
            "not cached yet"
        );
        assert!(!e.pending("ns/a", Expected::Created, true), "cached: met");
        assert!(
            !e.pending("ns/a", Expected::Created, false),
            "met expectations are dropped"
        );
        e.expect("ns/b", Expected::Deleted);
        assert!(e.pending("ns/b", Expected::Deleted, true));
        assert!(!e.pending("ns/b", Expected::Deleted, false));
    }
}
