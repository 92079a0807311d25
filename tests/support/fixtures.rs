//! Typed fixture builders: the one way tests make a StorageVirtualMachine, an OntapCluster or a
//! Toy. `json()` gives the manifest for tests that bend it into something the API must refuse.

use ontap_operator::api::{OntapCluster, StorageVirtualMachine};
use serde_json::{Value, json};

/// A StorageVirtualMachine: by default on cluster `lab` with a management LIF at 192.0.2.10/24
/// and one data LIF at 192.0.2.11/24.
#[derive(Clone, Debug)]
pub struct SvmFixture {
    name: String,
    cluster: String,
    nfs: bool,
    management: (String, u8),
    data: (String, u8),
}

pub fn svm(name: &str) -> SvmFixture {
    SvmFixture {
        name: name.to_owned(),
        cluster: "lab".to_owned(),
        nfs: false,
        management: ("192.0.2.10".to_owned(), 24),
        data: ("192.0.2.11".to_owned(), 24),
    }
}

impl SvmFixture {
    pub fn cluster(mut self, cluster: &str) -> Self {
        self.cluster = cluster.to_owned();
        self
    }

    pub fn nfs(mut self) -> Self {
        self.nfs = true;
        self
    }

    /// LIF addresses derived from `index`, so that several SVMs of one test never share one.
    pub fn index(self, index: u8) -> Self {
        let (a, b) = (2 * u16::from(index) + 10, 2 * u16::from(index) + 11);
        self.lifs(&format!("192.0.2.{a}"), &format!("192.0.2.{b}"), 24)
    }

    pub fn lifs(mut self, management: &str, data: &str, prefix_length: u8) -> Self {
        self.management = (management.to_owned(), prefix_length);
        self.data = (data.to_owned(), prefix_length);
        self
    }

    pub fn json(&self) -> Value {
        let mut spec = json!({
            "clusterRef": { "name": self.cluster },
            "managementLif": { "ip": self.management.0, "prefixLength": self.management.1 },
            "dataLifs": [ { "ip": self.data.0, "prefixLength": self.data.1 } ]
        });
        if self.nfs {
            spec["protocols"] = json!({ "nfs": true });
        }
        json!({
            "apiVersion": "ontap.storage.dev/v1alpha1",
            "kind": "StorageVirtualMachine",
            "metadata": { "name": self.name },
            "spec": spec
        })
    }

    pub fn build(&self) -> StorageVirtualMachine {
        serde_json::from_value(self.json()).unwrap()
    }

    /// The management and the data LIF address.
    pub fn addresses(&self) -> [&str; 2] {
        [&self.management.0, &self.data.0]
    }
}

/// An OntapCluster: by default at https://10.0.0.10 with its admin Secret `ontap-system/lab-admin`.
#[derive(Clone, Debug)]
pub struct ClusterFixture {
    name: String,
    endpoint: String,
    credentials: (String, String),
    ca: Option<(String, String)>,
    labels: Vec<(String, String)>,
}

pub fn ontap_cluster(name: &str) -> ClusterFixture {
    ClusterFixture {
        name: name.to_owned(),
        endpoint: "https://10.0.0.10".to_owned(),
        credentials: ("ontap-system".to_owned(), "lab-admin".to_owned()),
        ca: None,
        labels: Vec::new(),
    }
}

impl ClusterFixture {
    pub fn endpoint(mut self, endpoint: &str) -> Self {
        self.endpoint = endpoint.to_owned();
        self
    }

    pub fn credentials(mut self, namespace: &str, name: &str) -> Self {
        self.credentials = (namespace.to_owned(), name.to_owned());
        self
    }

    pub fn ca(mut self, namespace: &str, name: &str) -> Self {
        self.ca = Some((namespace.to_owned(), name.to_owned()));
        self
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.push((key.to_owned(), value.to_owned()));
        self
    }

    pub fn json(&self) -> Value {
        let mut manifest = json!({
            "apiVersion": "ontap.storage.dev/v1alpha1",
            "kind": "OntapCluster",
            "metadata": { "name": self.name },
            "spec": {
                "endpoint": self.endpoint,
                "credentialsSecretRef": {
                    "namespace": self.credentials.0, "name": self.credentials.1
                }
            }
        });
        if let Some((namespace, name)) = &self.ca {
            manifest["spec"]["caSecretRef"] = json!({ "namespace": namespace, "name": name });
        }
        if !self.labels.is_empty() {
            let labels: serde_json::Map<String, Value> = self
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                .collect();
            manifest["metadata"]["labels"] = Value::Object(labels);
        }
        manifest
    }

    pub fn build(&self) -> OntapCluster {
        serde_json::from_value(self.json()).unwrap()
    }
}
