//! Client for NetApp ONTAP's REST API, as far as the SVM controller needs it.
//!
//! One [`OntapClient`] per cluster: it verifies TLS by default, limits concurrent requests,
//! retries idempotent requests on transient failures, follows pagination, waits for jobs, and
//! turns every failure into an [`OntapError`] with a [`class`](OntapError::class) and an
//! [`is_ambiguous`](OntapError::is_ambiguous) flag. Passwords stay in
//! [`secrecy::SecretString`] and appear in no log line, span, error or `Debug` output.

mod answers;
mod client;
mod config;
mod endpoints;
mod error;
mod jobs;
mod metrics;
mod model;
mod ops;
#[cfg(test)]
mod proptests;
mod protocol;
mod query;
mod tls;
mod trace;

pub use answers::{AccountCheck, CredentialCheck, DeleteOutcome};
pub use client::{OntapClient, Pages};
pub use config::{
    CertificateFingerprint, Credentials, JobPollConfig, OntapConfig, RetryConfig, TlsVerification,
};
pub use error::{
    ApiError, ApiErrorArgument, ErrorClass, OntapError, Result, TransportFailure, classify_code,
    classify_status, codes, mentions_depletion,
};
pub use metrics::OntapMetrics;
pub use model::{
    Account, AccountApplication, AccountCreate, AccountPatch, Aggregate, AggregateSpace,
    BgpPeerGroup, BlockStorage, BroadcastDomain, BroadcastDomainCreate, ClusterInfo,
    ClusterVersion, EthernetPort, InterfaceLocation, IpInfo, IpInterface, IpInterfaceCreate,
    IpInterfacePatch, Job, JobState, MaxVolumes, Node, ObjectRef, PortRef, PortVlan, ProtocolState,
    QosFixed, QosPolicy, QosPolicyCreate, QosPolicyPatch, Role, RoleAccess, RoleCreate,
    RolePrivilege, Route, RouteCreate, Svm, SvmCreate, SvmLimits, SvmLimitsPatch, SvmPatch,
    SvmState, SvmStorage, SvmStorageLimit, SvmTargetState, VlanCreate, VolumeUsage,
};
pub use protocol::Protocol;
pub use trace::{TraceparentFn, is_valid_traceparent, otel_traceparent, random_traceparent};
