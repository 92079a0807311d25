//! The typed operations the SVM controller uses.
//!
//! Accounts and credential checks are in [`accounts`]; SVM limits, usage and QoS policies in
//! [`limits`]; REST roles in [`roles`]; ports, broadcast domains and routes in [`network`].
//!
//! Conventions:
//! - Lookups by name return `Ok(None)` only when ONTAP answered successfully with zero records.
//!   Any failure is an error, never "absent".
//! - Creates (POST) are never retried by the client. After an error for which
//!   [`OntapError::is_ambiguous`] is true the object may exist: look it up by name (e.g.
//!   [`OntapClient::svm_by_name`]) before creating again.
//! - Deletes report [`DeleteOutcome::AlreadyAbsent`] when the object is gone, which also covers a
//!   retried DELETE whose first attempt was applied but whose answer was lost.

mod accounts;
mod limits;
mod network;
mod roles;

use reqwest::Method;

use crate::answers::{DeleteOutcome, created_name, deleted, unique_by_name};
use crate::client::{Body, OntapClient, Pages, Request, RetryMode};
use crate::endpoints;
use crate::error::{OntapError, Result};
use crate::model::{
    Aggregate, BgpPeerGroup, ClusterInfo, CreatedKey, INTERFACE_FIELDS, IpInterface,
    IpInterfaceCreate, IpInterfacePatch, Node, SVM_FIELDS, Svm, SvmCreate, SvmPatch, SvmState,
};
use crate::protocol::Protocol;
use crate::query::{filter_value, path_value};

impl OntapClient {
    // -----------------------------------------------------------------------------------------
    // Cluster

    /// `GET /api/cluster`: name, uuid and version. A cheap authenticated probe.
    pub async fn cluster(&self) -> Result<ClusterInfo> {
        let url = self.url(&["api", "cluster"], &[("fields", "name,uuid,version")])?;
        self.get_json(endpoints::CLUSTER, url).await
    }

    pub async fn nodes(&self) -> Result<Vec<Node>> {
        let url = self.url(&["api", "cluster", "nodes"], &[("fields", "uuid,name")])?;
        self.get_all(endpoints::NODES, url, None).await
    }

    pub async fn aggregates(&self) -> Result<Vec<Aggregate>> {
        let url = self.url(
            &["api", "storage", "aggregates"],
            &[("fields", "uuid,name,space,volume-count")],
        )?;
        self.get_all(endpoints::AGGREGATES, url, None).await
    }

    /// The cluster's BGP peer groups: any at all means the cluster routes VIP interfaces.
    pub async fn bgp_peer_groups(&self) -> Result<Vec<BgpPeerGroup>> {
        let url = self.url(
            &["api", "network", "ip", "bgp", "peer-groups"],
            &[("fields", "uuid,name")],
        )?;
        self.get_all(endpoints::BGP_PEER_GROUPS, url, None).await
    }

    // -----------------------------------------------------------------------------------------
    // SVMs

    /// The SVM with exactly this name: `Ok(None)` when ONTAP answered with no record, an error
    /// when it answered with several or did not answer.
    pub async fn svm_by_name(&self, name: &str) -> Result<Option<Svm>> {
        let name = filter_value("SVM name", name)?;
        let url = self.url(
            &["api", "svm", "svms"],
            &[("name", name), ("fields", SVM_FIELDS)],
        )?;
        let records = self.get_all(endpoints::SVMS, url, None).await?;
        unique_by_name(endpoints::SVMS, name, records, |s: &Svm| &s.name)
    }

    /// Every SVM of the cluster, `max_records` per page: an inventory read in few requests
    /// where looking each SVM up by name would cost one request per SVM.
    pub fn svm_pages(&self, max_records: u32) -> Result<Pages<Svm>> {
        self.listing(
            endpoints::SVMS,
            &["api", "svm", "svms"],
            SVM_FIELDS,
            max_records,
        )
    }

    /// The SVM with this uuid. A missing one is an error with class
    /// [`NotFound`](super::ErrorClass::NotFound), so a wrong URL or proxy answer cannot pass
    /// for "deleted".
    pub async fn svm(&self, uuid: &str) -> Result<Svm> {
        let uuid = path_value("SVM uuid", uuid)?;
        let url = self.url(&["api", "svm", "svms", uuid], &[("fields", SVM_FIELDS)])?;
        self.get_json(endpoints::SVM, url).await
    }

    /// Creates an SVM and waits for the job; returns the SVM as ONTAP then reports it.
    ///
    /// Not retried. On an ambiguous error ([`OntapError::is_ambiguous`]: timeout, lost
    /// connection, expired job) the SVM may exist: call [`svm_by_name`](Self::svm_by_name).
    /// A name already in use is a [`Conflict`](super::ErrorClass::Conflict).
    ///
    /// The POST asks for the created record (`return_records=true`): with its uuid, the SVM is
    /// what was asked for — the job succeeded, and ONTAP creates SVMs running — so no lookup
    /// follows. Only a server that returns no record costs the lookup by name.
    pub async fn create_svm(&self, svm: &SvmCreate) -> Result<Svm> {
        let name = filter_value("SVM name", &svm.name)?;
        let req = Request {
            method: Method::POST,
            endpoint: endpoints::SVMS,
            url: self.job_url(&["api", "svm", "svms"], &[("return_records", "true")])?,
            body: Some(Body::json(svm)?),
            auth: None,
            retry: RetryMode::Never,
        };
        if let Some(created) = self.mutate_returning::<CreatedKey>(&req).await? {
            created_name(endpoints::SVMS, name, &created)?;
            return Ok(Svm {
                uuid: created.uuid,
                name: svm.name.clone(),
                state: Some(SvmState::Running),
                subtype: None,
                comment: svm.comment.clone(),
                ipspace: svm.ipspace.clone(),
                aggregates: svm.aggregates.clone(),
                nfs: svm.nfs,
                iscsi: svm.iscsi,
                nvme: svm.nvme,
            });
        }
        self.svm_by_name(name).await?.ok_or_else(|| {
            OntapError::Inconsistent(format!(
                "SVM {name:?} was created but a lookup by name finds nothing"
            ))
        })
    }

    /// Changes state, protocols or comment; waits for a job if ONTAP starts one.
    pub async fn patch_svm(&self, uuid: &str, patch: &SvmPatch) -> Result<()> {
        let uuid = path_value("SVM uuid", uuid)?;
        let req = Request {
            method: Method::PATCH,
            endpoint: endpoints::SVM,
            url: self.job_url(&["api", "svm", "svms", uuid], &[])?,
            body: Some(Body::json(patch)?),
            auth: None,
            retry: RetryMode::Idempotent,
        };
        self.mutate(&req).await
    }

    /// Deletes an SVM and waits for the job. Interfaces and accounts in it go with it; a CIFS
    /// server blocks the deletion (ONTAP code 2621525).
    pub async fn delete_svm(&self, uuid: &str) -> Result<DeleteOutcome> {
        let uuid = path_value("SVM uuid", uuid)?;
        let req = Request {
            method: Method::DELETE,
            endpoint: endpoints::SVM,
            url: self.job_url(&["api", "svm", "svms", uuid], &[])?,
            body: None,
            auth: None,
            retry: RetryMode::Idempotent,
        };
        deleted(self.mutate(&req).await)
    }

    // -----------------------------------------------------------------------------------------
    // Protocol services

    /// Switches `protocol` on or off for the SVM `svm_uuid`. ONTAP takes an SVM's
    /// `nfs|iscsi|nvme.enabled` only when the SVM is created; afterwards a protocol is switched
    /// on its service: `PATCH` the service, or `POST` it when the SVM has none yet. A protocol
    /// without a service is off already.
    pub async fn set_protocol(
        &self,
        svm_uuid: &str,
        protocol: Protocol,
        enabled: bool,
    ) -> Result<()> {
        let uuid = path_value("SVM uuid", svm_uuid)?;
        let mut service = protocol.collection_path().to_vec();
        service.push(uuid);
        let patch = Request {
            method: Method::PATCH,
            endpoint: protocol.service_endpoint(),
            url: self.url(&service, &[])?,
            body: Some(Body::json(&serde_json::json!({ "enabled": enabled }))?),
            auth: None,
            retry: RetryMode::Idempotent,
        };
        match self.mutate(&patch).await {
            Err(e) if e.is_not_found() && enabled => {
                // Not retried: a lost answer is found out by the next PATCH, which then succeeds.
                let create = Request {
                    method: Method::POST,
                    endpoint: protocol.collection_endpoint(),
                    url: self.url(protocol.collection_path(), &[])?,
                    body: Some(Body::json(&serde_json::json!({
                        "svm": { "uuid": svm_uuid },
                        "enabled": true,
                    }))?),
                    auth: None,
                    retry: RetryMode::Never,
                };
                self.mutate(&create).await
            }
            Err(e) if e.is_not_found() => Ok(()),
            other => other,
        }
    }

    // -----------------------------------------------------------------------------------------
    // IP interfaces

    /// All IP interfaces of an SVM.
    pub async fn interfaces(&self, svm_uuid: &str) -> Result<Vec<IpInterface>> {
        let svm_uuid = filter_value("SVM uuid", svm_uuid)?;
        let url = self.url(
            &["api", "network", "ip", "interfaces"],
            &[("svm.uuid", svm_uuid), ("fields", INTERFACE_FIELDS)],
        )?;
        self.get_all(endpoints::INTERFACES, url, None).await
    }

    /// Every IP interface of the cluster, `max_records` per page, with the fields
    /// [`interfaces`](Self::interfaces) reads: cluster-scoped ones carry no `svm`.
    pub fn interface_pages(&self, max_records: u32) -> Result<Pages<IpInterface>> {
        self.listing(
            endpoints::INTERFACES,
            &["api", "network", "ip", "interfaces"],
            INTERFACE_FIELDS,
            max_records,
        )
    }

    /// Every interface holding this IP address, in any SVM: who holds an address a create was
    /// refused for.
    pub async fn interfaces_by_address(&self, address: &str) -> Result<Vec<IpInterface>> {
        let address = filter_value("IP address", address)?;
        let url = self.url(
            &["api", "network", "ip", "interfaces"],
            &[("ip.address", address), ("fields", INTERFACE_FIELDS)],
        )?;
        self.get_all(endpoints::INTERFACES, url, None).await
    }

    /// The interface of this SVM with exactly this name.
    pub async fn interface_by_name(
        &self,
        svm_uuid: &str,
        name: &str,
    ) -> Result<Option<IpInterface>> {
        let svm_uuid = filter_value("SVM uuid", svm_uuid)?;
        let name = filter_value("interface name", name)?;
        let url = self.url(
            &["api", "network", "ip", "interfaces"],
            &[
                ("svm.uuid", svm_uuid),
                ("name", name),
                ("fields", INTERFACE_FIELDS),
            ],
        )?;
        let records = self.get_all(endpoints::INTERFACES, url, None).await?;
        unique_by_name(endpoints::INTERFACES, name, records, |i: &IpInterface| {
            &i.name
        })
    }

    /// Creates an interface (synchronous in ONTAP) and returns it as ONTAP reports it.
    /// `interface.svm` must carry the SVM's uuid.
    ///
    /// Not retried; after an ambiguous error use [`interface_by_name`](Self::interface_by_name).
    pub async fn create_interface(&self, interface: &IpInterfaceCreate) -> Result<IpInterface> {
        self.post_interface(interface, Body::json(interface)?).await
    }

    /// [`create_interface`](Self::create_interface) on a port of `broadcast_domain`: ONTAP
    /// picks the port (of `interface.location`'s home node, if it names one); a home port
    /// outside the domain is refused.
    pub async fn create_interface_in_broadcast_domain(
        &self,
        interface: &IpInterfaceCreate,
        broadcast_domain: &str,
    ) -> Result<IpInterface> {
        let mut body = serde_json::to_value(interface)
            .map_err(|e| OntapError::InvalidInput(format!("cannot encode request: {e}")))?;
        body["location"]["broadcast_domain"] = serde_json::json!({ "name": broadcast_domain });
        self.post_interface(interface, Body::json(&body)?).await
    }

    /// POSTs `body`, the creation of `interface` as sent.
    async fn post_interface(
        &self,
        interface: &IpInterfaceCreate,
        body: Body,
    ) -> Result<IpInterface> {
        let svm_uuid = interface
            .svm
            .uuid
            .as_deref()
            .ok_or_else(|| OntapError::InvalidInput("interface without SVM uuid".into()))?;
        filter_value("interface name", &interface.name)?;
        let req = Request {
            method: Method::POST,
            endpoint: endpoints::INTERFACES,
            url: self.url(
                &["api", "network", "ip", "interfaces"],
                &[("return_records", "true")],
            )?,
            body: Some(body),
            auth: None,
            retry: RetryMode::Never,
        };
        // As for SVMs: the created record's uuid makes the interface the one asked for.
        if let Some(created) = self.mutate_returning::<CreatedKey>(&req).await? {
            created_name(endpoints::INTERFACES, &interface.name, &created)?;
            return Ok(IpInterface {
                uuid: created.uuid,
                name: interface.name.clone(),
                enabled: Some(interface.enabled),
                ip: Some(interface.ip.clone()),
                location: interface.location.clone(),
                svm: Some(interface.svm.clone()),
                service_policy: interface.service_policy.clone(),
                vip: Some(interface.vip),
            });
        }
        self.interface_by_name(svm_uuid, &interface.name)
            .await?
            .ok_or_else(|| {
                OntapError::Inconsistent(format!(
                    "interface {:?} was created but a lookup by name finds nothing",
                    interface.name
                ))
            })
    }

    /// Moves an interface (home node and port), switches it, or changes its service policy;
    /// synchronous in ONTAP.
    pub async fn patch_interface(&self, uuid: &str, patch: &IpInterfacePatch) -> Result<()> {
        let uuid = path_value("interface uuid", uuid)?;
        let req = Request {
            method: Method::PATCH,
            endpoint: endpoints::INTERFACE,
            url: self.url(&["api", "network", "ip", "interfaces", uuid], &[])?,
            body: Some(Body::json(patch)?),
            auth: None,
            retry: RetryMode::Idempotent,
        };
        self.mutate(&req).await
    }

    pub async fn delete_interface(&self, uuid: &str) -> Result<DeleteOutcome> {
        let uuid = path_value("interface uuid", uuid)?;
        let req = Request {
            method: Method::DELETE,
            endpoint: endpoints::INTERFACE,
            url: self.url(&["api", "network", "ip", "interfaces", uuid], &[])?,
            body: None,
            auth: None,
            retry: RetryMode::Idempotent,
        };
        deleted(self.mutate(&req).await)
    }
}
