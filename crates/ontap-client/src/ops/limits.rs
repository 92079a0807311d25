//! SVM limits and usage (`max_volumes`, the capacity limit `storage.*`, the SVM's QoS policy)
//! and QoS policies.
//!
//! ONTAP has no per-SVM volume count: a resync reads the limits and capacity usage of every
//! SVM in one paged listing ([`OntapClient::svm_limit_pages`]) and counts volumes from one
//! cluster-wide volume listing ([`OntapClient::volume_usage_pages`]), so its cost grows with
//! the pages, not with the SVMs.

use reqwest::Method;

use crate::answers::{DeleteOutcome, created_name, deleted, unique_by_name};
use crate::client::{Body, OntapClient, Pages, Request, RetryMode};
use crate::endpoints;
use crate::error::{OntapError, Result};
use crate::model::{
    ClusterVersion, CreatedKey, QOS_POLICY_FIELDS, QosPolicy, QosPolicyCreate, QosPolicyPatch,
    SvmLimits, SvmLimitsPatch, VOLUME_USAGE_FIELDS, VolumeUsage, svm_limit_fields,
};
use crate::query::{filter_value, path_value};

impl OntapClient {
    // -----------------------------------------------------------------------------------------
    // SVM limits and usage

    /// One SVM's limits and usage. `version` is the cluster's ([`cluster`](Self::cluster)):
    /// before 9.13.1 the answer has no `storage`.
    pub async fn svm_limits(&self, uuid: &str, version: &ClusterVersion) -> Result<SvmLimits> {
        let uuid = path_value("SVM uuid", uuid)?;
        let url = self.url(
            &["api", "svm", "svms", uuid],
            &[("fields", svm_limit_fields(version))],
        )?;
        self.get_json(endpoints::SVM, url).await
    }

    /// The limits and usage of every SVM of the cluster, `max_records` per page.
    pub fn svm_limit_pages(
        &self,
        max_records: u32,
        version: &ClusterVersion,
    ) -> Result<Pages<SvmLimits>> {
        self.listing(
            endpoints::SVMS,
            &["api", "svm", "svms"],
            svm_limit_fields(version),
            max_records,
        )
    }

    /// Sets an SVM's `max_volumes`, capacity limit or QoS policy; waits for the job.
    pub async fn patch_svm_limits(&self, uuid: &str, patch: &SvmLimitsPatch) -> Result<()> {
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

    /// Every volume of the cluster with its SVM and size, `max_records` per page: the volume
    /// count and allocated size per SVM, which ONTAP does not report on the SVM (its
    /// `storage.allocated` only while a capacity limit is set).
    pub fn volume_usage_pages(&self, max_records: u32) -> Result<Pages<VolumeUsage>> {
        self.listing(
            endpoints::VOLUMES,
            &["api", "storage", "volumes"],
            VOLUME_USAGE_FIELDS,
            max_records,
        )
    }

    // -----------------------------------------------------------------------------------------
    // QoS policies

    /// The QoS policies owned by an SVM.
    pub async fn qos_policies(&self, svm_uuid: &str) -> Result<Vec<QosPolicy>> {
        let svm_uuid = filter_value("SVM uuid", svm_uuid)?;
        let url = self.url(
            &["api", "storage", "qos", "policies"],
            &[("svm.uuid", svm_uuid), ("fields", QOS_POLICY_FIELDS)],
        )?;
        self.get_all(endpoints::QOS_POLICIES, url, None).await
    }

    /// The QoS policy with exactly this name, in any SVM: ONTAP keys policies by name across
    /// the cluster.
    pub async fn qos_policy_by_name(&self, name: &str) -> Result<Option<QosPolicy>> {
        let name = filter_value("QoS policy name", name)?;
        let url = self.url(
            &["api", "storage", "qos", "policies"],
            &[("name", name), ("fields", QOS_POLICY_FIELDS)],
        )?;
        let records = self.get_all(endpoints::QOS_POLICIES, url, None).await?;
        unique_by_name(endpoints::QOS_POLICIES, name, records, |p: &QosPolicy| {
            &p.name
        })
    }

    /// Every QoS policy of the cluster, `max_records` per page.
    pub fn qos_policy_pages(&self, max_records: u32) -> Result<Pages<QosPolicy>> {
        self.listing(
            endpoints::QOS_POLICIES,
            &["api", "storage", "qos", "policies"],
            QOS_POLICY_FIELDS,
            max_records,
        )
    }

    /// Creates a QoS policy and waits for the job; returns it as created.
    ///
    /// Not retried; after an ambiguous error look it up with
    /// [`qos_policy_by_name`](Self::qos_policy_by_name). A name in use anywhere in the cluster
    /// is a [`Conflict`](crate::ErrorClass::Conflict).
    pub async fn create_qos_policy(&self, policy: &QosPolicyCreate) -> Result<QosPolicy> {
        let name = filter_value("QoS policy name", &policy.name)?;
        let req = Request {
            method: Method::POST,
            endpoint: endpoints::QOS_POLICIES,
            url: self.job_url(
                &["api", "storage", "qos", "policies"],
                &[("return_records", "true")],
            )?,
            body: Some(Body::json(policy)?),
            auth: None,
            retry: RetryMode::Never,
        };
        if let Some(created) = self.mutate_returning::<CreatedKey>(&req).await? {
            created_name(endpoints::QOS_POLICIES, name, &created)?;
            return Ok(QosPolicy {
                uuid: created.uuid,
                name: policy.name.clone(),
                svm: Some(policy.svm.clone()),
                fixed: Some(policy.fixed),
                object_count: Some(0),
            });
        }
        self.qos_policy_by_name(name).await?.ok_or_else(|| {
            OntapError::Inconsistent(format!(
                "QoS policy {name:?} was created but a lookup by name finds nothing"
            ))
        })
    }

    /// Changes a QoS policy's name or limits; waits for the job.
    pub async fn patch_qos_policy(&self, uuid: &str, patch: &QosPolicyPatch) -> Result<()> {
        let uuid = path_value("QoS policy uuid", uuid)?;
        let req = Request {
            method: Method::PATCH,
            endpoint: endpoints::QOS_POLICY,
            url: self.job_url(&["api", "storage", "qos", "policies", uuid], &[])?,
            body: Some(Body::json(patch)?),
            auth: None,
            retry: RetryMode::Idempotent,
        };
        self.mutate(&req).await
    }

    /// Deletes a QoS policy and waits for the job; ONTAP removes it from the objects it
    /// applies to.
    pub async fn delete_qos_policy(&self, uuid: &str) -> Result<DeleteOutcome> {
        let uuid = path_value("QoS policy uuid", uuid)?;
        let req = Request {
            method: Method::DELETE,
            endpoint: endpoints::QOS_POLICY,
            url: self.job_url(&["api", "storage", "qos", "policies", uuid], &[])?,
            body: None,
            auth: None,
            retry: RetryMode::Idempotent,
        };
        deleted(self.mutate(&req).await)
    }
}
