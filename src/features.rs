//! The one list of the operator's feature sets. The runtime, the command line and the
//! manifests know features only through it: adding one is its module or crate (implementing
//! [`Feature`]) and one line here. A feature that builds on another comes after it.

use reconcile_engine::feature::Feature;

/// Every feature set, in setup order.
pub const FEATURES: &[&dyn Feature] = &[
    &crate::ontap::OntapFeature,
    &crate::extension::feature::ExtensionFeature,
    &kyma_inventory::feature::KymaFeature,
];
