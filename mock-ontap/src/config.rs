//! What the fake cluster starts with, and the knobs tests turn at runtime.
//!
//! A config file is YAML (JSON is valid YAML, so either works); every key is optional and falls
//! back to the defaults of [`MockConfig::default`].

use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

pub const DEFAULT_ADMIN_USER: &str = "admin";
pub const DEFAULT_ADMIN_PASSWORD: &str = "Netapp1!";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MockConfig {
    pub admin: Credentials,
    pub cluster: ClusterSpec,
    pub settings: Settings,
}

impl MockConfig {
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading config file {}", path.display()))?;
        Self::from_yaml(&text).with_context(|| format!("parsing config file {}", path.display()))
    }

    pub fn from_yaml(text: &str) -> anyhow::Result<Self> {
        Ok(serde_yaml::from_str(text)?)
    }
}

/// The cluster administrator, who sees and may change everything under `/api`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct Credentials {
    pub user: String,
    pub password: String,
}

impl Default for Credentials {
    fn default() -> Self {
        Self {
            user: DEFAULT_ADMIN_USER.into(),
            password: DEFAULT_ADMIN_PASSWORD.into(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterSpec {
    pub name: String,
    /// Generated at start when absent.
    pub uuid: Option<String>,
    /// `generation.major.minor`, e.g. `9.16.1`.
    pub version: String,
    pub nodes: Vec<NodeSpec>,
    pub aggregates: Vec<AggregateSpec>,
}

impl Default for ClusterSpec {
    fn default() -> Self {
        let node = |name: &str| NodeSpec {
            name: name.into(),
            uuid: None,
            ports: vec!["e0c".into(), "e0d".into()],
        };
        let aggr = |name: &str, node: &str| AggregateSpec {
            name: name.into(),
            node: node.into(),
            uuid: None,
            size_bytes: 10 * 1024_u64.pow(4),
        };
        Self {
            name: "mock-cluster".into(),
            uuid: None,
            version: "9.16.1".into(),
            nodes: vec![node("node-01"), node("node-02")],
            aggregates: vec![
                aggr("aggr1_node01", "node-01"),
                aggr("aggr1_node02", "node-02"),
            ],
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    #[serde(default)]
    pub uuid: Option<String>,
    /// Ethernet ports usable as LIF home ports.
    #[serde(default)]
    pub ports: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AggregateSpec {
    pub name: String,
    /// Name of the owning node.
    pub node: String,
    #[serde(default)]
    pub uuid: Option<String>,
    #[serde(default = "default_aggregate_size")]
    pub size_bytes: u64,
}

fn default_aggregate_size() -> u64 {
    10 * 1024_u64.pow(4)
}

/// Behaviour knobs; `PUT /_mock/config` changes them at runtime.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// How long an SVM job takes from POST to its end; the first fifth of it is `queued`.
    pub job_duration_ms: u64,
    /// How long a finished job stays readable before `GET` answers 404.
    pub job_expiry_ms: u64,
    /// SVM jobs allowed in flight at once; ONTAP allows 5. 0 means no limit.
    pub max_concurrent_svm_jobs: usize,
    /// How many previous passwords an account may not reuse (ONTAP's default is 6).
    pub password_history: usize,
    /// ONTAP creates a locked `vsadmin` account in every new SVM.
    pub create_vsadmin_account: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            job_duration_ms: 200,
            job_expiry_ms: 300_000,
            max_concurrent_svm_jobs: 5,
            password_history: 6,
            create_vsadmin_account: true,
        }
    }
}

/// A partial update of [`Settings`], the body of `PUT /_mock/config`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsPatch {
    pub job_duration_ms: Option<u64>,
    pub job_expiry_ms: Option<u64>,
    pub max_concurrent_svm_jobs: Option<usize>,
    pub password_history: Option<usize>,
    pub create_vsadmin_account: Option<bool>,
}

impl Settings {
    pub fn apply(&mut self, patch: SettingsPatch) {
        let SettingsPatch {
            job_duration_ms,
            job_expiry_ms,
            max_concurrent_svm_jobs,
            password_history,
            create_vsadmin_account,
        } = patch;
        if let Some(v) = job_duration_ms {
            self.job_duration_ms = v;
        }
        if let Some(v) = job_expiry_ms {
            self.job_expiry_ms = v;
        }
        if let Some(v) = max_concurrent_svm_jobs {
            self.max_concurrent_svm_jobs = v;
        }
        if let Some(v) = password_history {
            self.password_history = v;
        }
        if let Some(v) = create_vsadmin_account {
            self.create_vsadmin_account = v;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn partial_yaml_keeps_defaults() {
        let config =
            MockConfig::from_yaml("cluster:\n  name: c1\nsettings:\n  job_duration_ms: 5\n")
                .unwrap();
        assert_eq!(config.cluster.name, "c1");
        assert_eq!(config.cluster.nodes.len(), 2);
        assert_eq!(config.settings.job_duration_ms, 5);
        assert_eq!(config.settings.max_concurrent_svm_jobs, 5);
        assert_eq!(config.admin.user, DEFAULT_ADMIN_USER);
    }

    #[test]
    fn json_is_accepted_and_unknown_keys_rejected() {
        assert!(MockConfig::from_yaml(r#"{"settings":{"job_expiry_ms":10}}"#).is_ok());
        assert!(MockConfig::from_yaml(r#"{"setting":{}}"#).is_err());
    }
}
