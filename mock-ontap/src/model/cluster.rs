//! The fixed inventory of the fake cluster: nodes, aggregates, ports, the Default IPspace.

use anyhow::bail;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::config::ClusterSpec;

#[derive(Debug, Clone)]
pub struct Cluster {
    pub name: String,
    pub uuid: String,
    pub version: Version,
    pub nodes: Vec<Node>,
    pub aggregates: Vec<Aggregate>,
    pub ports: Vec<Port>,
    pub ipspace_uuid: String,
}

#[derive(Debug, Clone, Copy)]
pub struct Version {
    pub generation: u32,
    pub major: u32,
    pub minor: u32,
}

impl Version {
    /// Whether this release is `since` (generation, major, minor) or later.
    pub fn at_least(self, since: (u32, u32, u32)) -> bool {
        self.triple() >= since
    }

    pub fn triple(self) -> (u32, u32, u32) {
        (self.generation, self.major, self.minor)
    }
}

#[derive(Debug, Clone)]
pub struct Node {
    pub uuid: String,
    pub name: String,
}

#[derive(Debug, Clone)]
pub struct Aggregate {
    pub uuid: String,
    pub name: String,
    pub node: Node,
    pub size_bytes: u64,
}

#[derive(Debug, Clone)]
pub struct Port {
    pub uuid: String,
    pub name: String,
    pub node: Node,
}

fn new_uuid() -> String {
    Uuid::new_v4().to_string()
}

impl Cluster {
    pub fn from_spec(spec: &ClusterSpec) -> anyhow::Result<Self> {
        let version = parse_version(&spec.version)?;
        let nodes: Vec<Node> = spec
            .nodes
            .iter()
            .map(|n| Node {
                uuid: n.uuid.clone().unwrap_or_else(new_uuid),
                name: n.name.clone(),
            })
            .collect();
        let find_node = |name: &str| nodes.iter().find(|n| n.name == name).cloned();
        let mut aggregates = Vec::new();
        for a in &spec.aggregates {
            let Some(node) = find_node(&a.node) else {
                bail!("aggregate {} names unknown node {}", a.name, a.node);
            };
            aggregates.push(Aggregate {
                uuid: a.uuid.clone().unwrap_or_else(new_uuid),
                name: a.name.clone(),
                node,
                size_bytes: a.size_bytes,
            });
        }
        let ports = spec
            .nodes
            .iter()
            .zip(&nodes)
            .flat_map(|(spec, node)| {
                spec.ports.iter().map(|p| Port {
                    uuid: new_uuid(),
                    name: p.clone(),
                    node: node.clone(),
                })
            })
            .collect();
        Ok(Self {
            name: spec.name.clone(),
            uuid: spec.uuid.clone().unwrap_or_else(new_uuid),
            version,
            nodes,
            aggregates,
            ports,
            ipspace_uuid: new_uuid(),
        })
    }

    pub fn node_by(&self, uuid: Option<&str>, name: Option<&str>) -> Option<&Node> {
        self.nodes
            .iter()
            .find(|n| uuid.is_none_or(|u| n.uuid == u) && name.is_none_or(|nm| n.name == nm))
    }

    pub fn aggregate_by(&self, uuid: Option<&str>, name: Option<&str>) -> Option<&Aggregate> {
        self.aggregates
            .iter()
            .find(|a| uuid.is_none_or(|u| a.uuid == u) && name.is_none_or(|nm| a.name == nm))
    }

    /// A node and its HA partner, in node order. HA pairs are hardware the mock does not
    /// describe: it pairs the nodes in configuration order (1st with 2nd, 3rd with 4th), as
    /// ONTAP numbers the nodes of a cluster built pair by pair; an odd last node stands alone.
    pub fn ha_pair(&self, node_uuid: &str) -> Vec<&Node> {
        let Some(index) = self.nodes.iter().position(|n| n.uuid == node_uuid) else {
            return Vec::new();
        };
        let first = index - index % 2;
        self.nodes.iter().skip(first).take(2).collect()
    }

    pub fn port(&self, node_uuid: &str, name: &str) -> Option<&Port> {
        self.ports
            .iter()
            .find(|p| p.node.uuid == node_uuid && p.name == name)
    }

    pub fn to_json(&self) -> Value {
        let Version {
            generation,
            major,
            minor,
        } = self.version;
        json!({
            "name": self.name,
            "uuid": self.uuid,
            "version": {
                "full": format!("NetApp Release {generation}.{major}.{minor}: mock-ontap"),
                "generation": generation,
                "major": major,
                "minor": minor,
            },
            "_links": { "self": { "href": "/api/cluster" } },
        })
    }

    pub fn ipspace_json(&self) -> Value {
        json!({ "name": "Default", "uuid": self.ipspace_uuid,
            "_links": { "self": { "href": format!("/api/network/ipspaces/{}", self.ipspace_uuid) } } })
    }
}

impl Node {
    pub fn reference(&self) -> Value {
        json!({ "name": self.name, "uuid": self.uuid,
            "_links": { "self": { "href": format!("/api/cluster/nodes/{}", self.uuid) } } })
    }

    pub fn to_json(&self, cluster: &Cluster) -> Value {
        let Version {
            generation,
            major,
            minor,
        } = cluster.version;
        json!({
            "uuid": self.uuid,
            "name": self.name,
            "state": "up",
            "membership": "member",
            "model": "mock",
            "version": { "generation": generation, "major": major, "minor": minor },
            "_links": { "self": { "href": format!("/api/cluster/nodes/{}", self.uuid) } },
        })
    }
}

impl Aggregate {
    pub fn to_json(&self) -> Value {
        json!({
            "uuid": self.uuid,
            "name": self.name,
            "node": self.node.reference(),
            "state": "online",
            "volume-count": 0,
            "space": { "block_storage": {
                "size": self.size_bytes, "available": self.size_bytes, "used": 0,
            } },
            "_links": { "self": { "href": format!("/api/storage/aggregates/{}", self.uuid) } },
        })
    }
}

fn parse_version(text: &str) -> anyhow::Result<Version> {
    let parts: Vec<u32> = text
        .split('.')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("cluster version {text:?}: {e}"))?;
    let [generation, major, minor] = parts.as_slice() else {
        bail!("cluster version {text:?} is not generation.major.minor");
    };
    Ok(Version {
        generation: *generation,
        major: *major,
        minor: *minor,
    })
}
