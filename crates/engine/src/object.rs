//! The kinds the engine works with: [`Object`], any kind it can watch and cache, and
//! [`EngineResource`], a kind it can reconcile. Spelled once here instead of at every generic
//! function; every other module builds on these and this one on none of them.

use std::fmt::Debug;

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::core::object::HasStatus;
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::status::ConditionedStatus;

/// How to build an [`Api`] for a kind of this scope, optionally limited to one namespace.
/// Implemented for both scopes, so generic code can ask for the right `Api` of any kind.
pub trait ScopedApi {
    /// `Api::namespaced` for namespaced kinds when `namespace` is set, else `Api::all`.
    fn api<K: Resource<Scope = Self, DynamicType = ()>>(
        client: kube::Client,
        namespace: Option<&str>,
    ) -> Api<K>;
}

impl ScopedApi for NamespaceResourceScope {
    fn api<K: Resource<Scope = Self, DynamicType = ()>>(
        client: kube::Client,
        namespace: Option<&str>,
    ) -> Api<K> {
        match namespace {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        }
    }
}

impl ScopedApi for ClusterResourceScope {
    fn api<K: Resource<Scope = Self, DynamicType = ()>>(
        client: kube::Client,
        _namespace: Option<&str>,
    ) -> Api<K> {
        Api::all(client)
    }
}

/// A Kubernetes kind the engine can watch and cache: typed, cloneable, sendable. Spelled once
/// here instead of at every generic function.
pub trait Object:
    Resource<DynamicType = (), Scope: ScopedApi>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<K> Object for K where
    K: Resource<DynamicType = (), Scope: ScopedApi>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// A kind the engine can reconcile: an [`Object`] whose status implements
/// [`ConditionedStatus`]. Implemented automatically for every `#[derive(CustomResource)]` type
/// with such a status.
pub trait EngineResource: Object + HasStatus<Status: ConditionedStatus> {}

impl<K> EngineResource for K where K: Object + HasStatus<Status: ConditionedStatus> {}

/// The status type of `K`.
pub type StatusOf<K> = <K as HasStatus>::Status;
