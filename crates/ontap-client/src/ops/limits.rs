//! SVM limits and usage (`max_volumes`, the capacity limit `storage.*`, the SVM's QoS policy)
//! and QoS policies.
//!
//! ONTAP has no per-SVM volume count: a resync reads the limits and capacity usage of every
//! SVM in one paged listing ([`OntapClient::svm_limit_pages`]) and counts volumes from one
//! cluster-wide volume listing ([`OntapClient::volume_usage_pages`]), so its cost grows with
//! the pages, not with the SVMs.

use reqwest::Method;

use crate::client::{Body, OntapClient, Pages, Request, RetryMode, endpoints};
use crate::error::{OntapError, Result};
use crate::model::{
    ClusterVersion, CreatedKey, QOS_POLICY_FIELDS, QosPolicy, QosPolicyCreate, QosPolicyPatch,
    SVM_LIMIT_FIELDS, SVM_LIMIT_FIELDS_BEFORE_9_13_1, SVM_STORAGE_LIMIT_SINCE, SvmLimits,
    SvmLimitsPatch, VOLUME_USAGE_FIELDS, VolumeUsage,
};

use super::*;

impl ClusterVersion {
    /// Whether the cluster knows an SVM's capacity limit: older releases refuse `storage` as an
    /// unknown field.
    pub fn has_svm_storage_limit(&self) -> bool {
        (self.generation, self.major, self.minor) >= SVM_STORAGE_LIMIT_SINCE
    }
}

fn has_storage_limit(version: &ClusterVersion) -> bool {
    version.has_svm_storage_limit()
}

impl OntapClient {
    // -----------------------------------------------------------------------------------------
    // SVM limits and usage

    /// One SVM's limits and usage. `version` is the cluster's ([`cluster`](Self::cluster)):
    /// before 9.13.1 the answer has no `storage`.
    pub async fn svm_limits(&self, uuid: &str, version: &ClusterVersion) -> Result<SvmLimits> {
        let uuid = path_value("SVM uuid", uuid)?;
        let url = if has_storage_limit(version) {
            self.url(
                &["api", "svm", "svms", uuid],
                &[("fields", SVM_LIMIT_FIELDS)],
            )?
        } else {
            self.url(
                &["api", "svm", "svms", uuid],
                &[("fields", SVM_LIMIT_FIELDS_BEFORE_9_13_1)],
            )?
        };
        self.get_json(endpoints::SVM, url).await
    }

    /// The limits and usage of every SVM of the cluster, `max_records` per page.
    pub fn svm_limit_pages(
        &self,
        max_records: u32,
        version: &ClusterVersion,
    ) -> Result<Pages<SvmLimits>> {
        let url = if has_storage_limit(version) {
            self.url(&["api", "svm", "svms"], &[("fields", SVM_LIMIT_FIELDS)])?
        } else {
            self.url(
                &["api", "svm", "svms"],
                &[("fields", SVM_LIMIT_FIELDS_BEFORE_9_13_1)],
            )?
        };
        Ok(self.pages(endpoints::SVMS, url, max_records))
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
        let url = self.url(
            &["api", "storage", "volumes"],
            &[("fields", VOLUME_USAGE_FIELDS)],
        )?;
        Ok(self.pages(endpoints::VOLUMES, url, max_records))
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
        let url = self.url(
            &["api", "storage", "qos", "policies"],
            &[("fields", QOS_POLICY_FIELDS)],
        )?;
        Ok(self.pages(endpoints::QOS_POLICIES, url, max_records))
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn storage_limit_from_9_13_1_on() {
        let version = |generation, major, minor| ClusterVersion {
            full: String::new(),
            generation,
            major,
            minor,
        };
        assert!(!has_storage_limit(&version(9, 12, 1)));
        assert!(!has_storage_limit(&version(9, 13, 0)));
        assert!(has_storage_limit(&version(9, 13, 1)));
        assert!(has_storage_limit(&version(9, 16, 1)));
        assert!(has_storage_limit(&version(10, 0, 0)));
    }
}
