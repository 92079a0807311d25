//! One Kyma test world: a namespace of the test control plane and a real operator process
//! running only the Kyma controllers (`--controllers=kyma`), scoped to that namespace, at a time
//! scale that makes a standard Kyma take seconds, as the ServiceAccount of `deploy/rbac.yaml`
//! plus the Kyma rules the chart adds (`deploy/chart/files/clusterrole-rules-kyma.yaml`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::TryStreamExt;
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use kyma_inventory::api::{
    HelmComponent, HelmComponentSpec, HelmComponentState, Kyma, KymaComponent, KymaSpec, KymaState,
};
use serde_json::json;

use super::operator::{
    OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT, OperatorProcess, apply_object, operator_identity,
};
use super::{TestEnv, env, poll, repo_root, tail, tool};

/// Lifecycle durations are divided by this: the longest standard component,
/// `service-catalog-addons`, takes 67 s / 20 = 3.35 s, the progress interval 40 s / 20 = 2 s.
pub const TIME_SCALE: f64 = 20.0;

/// Generous for a Kyma of seconds on a shared 2-core machine (first renders run helm 18 times).
pub const SUCCESS_WITHIN: Duration = Duration::from_secs(90);

/// The helm binary `hack/tools.sh` builds (once, cached).
pub fn helm() -> PathBuf {
    static HELM: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    HELM.get_or_init(|| tool("helm")).clone()
}

/// The operator's ServiceAccount identity with the chart's Kyma rules bound to it, as
/// `kyma.enabled=true` installs them: a rule the generated file lacks fails the tests.
pub async fn kyma_identity(client: &Client) -> PathBuf {
    let kubeconfig = operator_identity(client).await;
    let text =
        std::fs::read_to_string(repo_root().join("deploy/chart/files/clusterrole-rules-kyma.yaml"))
            .unwrap();
    let rules: Vec<PolicyRule> = serde_yaml::from_str(&text).unwrap();
    let params = kube::api::PatchParams::apply("ontap-operator-tests").force();
    apply_object(
        client,
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "ontap-operator-kyma-tests"},
            "rules": rules,
        }),
        &params,
    )
    .await
    .unwrap();
    apply_object(
        client,
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "ontap-operator-kyma-tests"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "ontap-operator-kyma-tests",
            },
            "subjects": [{
                "kind": "ServiceAccount",
                "name": OPERATOR_SERVICE_ACCOUNT,
                "namespace": OPERATOR_NAMESPACE,
            }],
        }),
        &params,
    )
    .await
    .unwrap();
    kubeconfig
}

pub struct KymaWorld {
    pub env: TestEnv,
    pub operator: OperatorProcess,
    kubeconfig: PathBuf,
    args: Vec<String>,
}

impl KymaWorld {
    /// A namespace and an operator for it; `extra` are more `run` flags.
    pub async fn start(extra: &[&str]) -> Self {
        let world = Self::without_operator().await;
        world.with_operator(extra)
    }

    /// The namespace and identity only: objects can be created before [`Self::with_operator`]
    /// starts the operator.
    pub async fn without_operator() -> KymaWorldBuilder {
        let env = env().await;
        let kubeconfig = kyma_identity(&env.client).await;
        KymaWorldBuilder { env, kubeconfig }
    }

    /// Stops the operator abruptly and starts a new one with the same flags.
    pub fn restart_operator(&mut self) {
        self.operator.kill();
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        self.operator = OperatorProcess::spawn(&self.kubeconfig, &args, &[]);
    }

    pub fn kymas(&self) -> Api<Kyma> {
        Api::namespaced(self.env.client.clone(), &self.env.namespace)
    }

    pub fn components(&self) -> Api<HelmComponent> {
        Api::namespaced(self.env.client.clone(), &self.env.namespace)
    }

    pub async fn create_kyma(&self, name: &str, components: &[(&str, Option<&str>)]) -> Kyma {
        self.kymas()
            .create(&PostParams::default(), &kyma(name, components))
            .await
            .unwrap()
    }

    /// Waits until the Kyma reports `success`, failing with the operator's log.
    pub async fn wait_success(&self, name: &str) -> Kyma {
        let kymas = self.kymas();
        let found = super::try_poll(SUCCESS_WITHIN, async || {
            let kyma = kymas.get(name).await.map_err(|e| e.to_string())?;
            match kyma.status.as_ref().and_then(|s| s.status) {
                Some(KymaState::Success) => Ok(kyma),
                other => Err(format!("status {other:?}: {:?}", kyma.status)),
            }
        })
        .await;
        found.unwrap_or_else(|why| {
            panic!(
                "Kyma {name} not at success: {why}\n--- operator log ---\n{}",
                tail(&self.operator.logs(), 40)
            )
        })
    }

    /// Waits until the HelmComponent `name` exists and reports `success`; returns it.
    pub async fn wait_component_success(&self, name: &str) -> HelmComponent {
        let components = self.components();
        let found = super::try_poll(SUCCESS_WITHIN, async || {
            let c = components.get_opt(name).await.map_err(|e| e.to_string())?;
            match c {
                Some(c) if component_state(&c) == Some(HelmComponentState::Success) => Ok(c),
                other => Err(format!("{:?}", other.and_then(|c| c.status))),
            }
        })
        .await;
        found.unwrap_or_else(|why| {
            panic!(
                "HelmComponent {name} not at success: {why}\n--- operator log ---\n{}",
                tail(&self.operator.logs(), 40)
            )
        })
    }

    /// The HelmComponents of the namespace, by name.
    pub async fn children(&self) -> Vec<HelmComponent> {
        let mut items = self
            .components()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items;
        items.sort_by_key(|c| c.name_any());
        items
    }

    /// Waits until no object of `api` is named `name`.
    pub async fn wait_gone<K>(&self, api: &Api<K>, name: &str, timeout: Duration)
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        if let Err(why) = super::gone(api, name, timeout).await {
            panic!(
                "{why}\n--- operator log ---\n{}",
                tail(&self.operator.logs(), 40)
            );
        }
    }

    /// The operator's `/metrics` once it answers.
    pub async fn metrics(&self) -> String {
        poll("operator /metrics", Duration::from_secs(30), async || {
            let text = reqwest::get(format!("http://{}/metrics", self.operator.metrics))
                .await
                .ok()?
                .text()
                .await
                .ok()?;
            Some(text)
        })
        .await
    }
}

pub struct KymaWorldBuilder {
    pub env: TestEnv,
    kubeconfig: PathBuf,
}

impl KymaWorldBuilder {
    /// Starts the operator: only the Kyma controllers, this namespace, [`TIME_SCALE`], and
    /// `extra` flags.
    pub fn with_operator(self, extra: &[&str]) -> KymaWorld {
        let mut args = vec![
            "--controllers=kyma".to_owned(),
            format!("--namespace={}", self.env.namespace),
            format!("--kyma-time-scale={TIME_SCALE}"),
            format!("--helm={}", helm().display()),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let operator = OperatorProcess::spawn(&self.kubeconfig, &argv, &[]);
        KymaWorld {
            env: self.env,
            operator,
            kubeconfig: self.kubeconfig,
            args,
        }
    }
}

/// A Kyma with the given components (name, namespace).
pub fn kyma(name: &str, components: &[(&str, Option<&str>)]) -> Kyma {
    Kyma {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        spec: KymaSpec {
            components: components
                .iter()
                .map(|(c, ns)| KymaComponent {
                    name: (*c).to_owned(),
                    namespace: ns.map(str::to_owned),
                })
                .collect(),
        },
        status: None,
    }
}

/// A HelmComponent of the shipped chart `component`, without an owner.
pub fn helm_component(name: &str, component: &str) -> HelmComponent {
    HelmComponent {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        spec: HelmComponentSpec {
            component_name: component.to_owned(),
            chart_location: None,
            version: None,
            namespace: None,
        },
        status: None,
    }
}

/// Every status of every object of a kind a watch delivered, in order, by name — started before
/// the objects change, so that short-lived states are not missed between two polls.
pub struct StatusLog<S> {
    seen: Arc<Mutex<Vec<(String, S)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl<S: Clone + Send + 'static> StatusLog<S> {
    pub fn start<K>(api: Api<K>, status: impl Fn(&K) -> Option<S> + Send + 'static) -> Self
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    {
        let seen: Arc<Mutex<Vec<(String, S)>>> = Arc::default();
        let task = tokio::spawn({
            let seen = seen.clone();
            async move {
                let stream = watcher(api, watcher::Config::default())
                    .default_backoff()
                    .applied_objects();
                let mut stream = std::pin::pin!(stream);
                while let Ok(Some(object)) = stream.try_next().await {
                    if let Some(s) = status(&object) {
                        seen.lock().unwrap().push((object.name_any(), s));
                    }
                }
            }
        });
        StatusLog { seen, task }
    }

    /// The statuses seen of `name`, in order.
    pub fn of(&self, name: &str) -> Vec<S> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, s)| s.clone())
            .collect()
    }

    pub fn all(&self) -> Vec<(String, S)> {
        self.seen.lock().unwrap().clone()
    }
}

impl<S> Drop for StatusLog<S> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A HelmComponent's `status.status`.
pub fn component_state(c: &HelmComponent) -> Option<HelmComponentState> {
    c.status.as_ref()?.status
}
