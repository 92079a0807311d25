//! The seed Secret contract: what the StorageVirtualMachine controller promises whoever reads an
//! SVM's credentials (the Gardener Extension, a user's workload). An `Opaque` Secret in the
//! StorageVirtualMachine's namespace, controlled by that object, with these data keys and
//! labelled [`MANAGED_BY_LABEL`]`=`[`MANAGED_BY_VALUE`]. Writing it, and verifying what it holds,
//! is the SVM controller's alone (`crate::ontap::svm::seed_secret`).

/// Key of the account name.
pub const USERNAME_KEY: &str = "username";
/// Key of the account password.
pub const PASSWORD_KEY: &str = "password";
/// Key of the SVM management LIF's IP address.
pub const MANAGEMENT_LIF_KEY: &str = "managementLIF";
/// Key of the SVM name in ONTAP.
pub const SVM_KEY: &str = "svm";
/// Key of the SVM's ONTAP UUID.
pub const SVM_UUID_KEY: &str = "svmUUID";
/// Every key of the contract, in the order they are reported.
pub const SEED_KEYS: [&str; 5] = [
    USERNAME_KEY,
    PASSWORD_KEY,
    MANAGEMENT_LIF_KEY,
    SVM_KEY,
    SVM_UUID_KEY,
];

/// Label marking objects this operator manages.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY_LABEL`].
pub const MANAGED_BY_VALUE: &str = "ontap-operator";

/// The label selector of the seed Secrets. The one Secret cache of the operator is restricted
/// to it (caching every Secret of the cluster would cost memory and widen what a memory dump
/// reveals): every controller that reads seed Secrets asks for the cache with this selector.
pub fn seed_secret_selector() -> String {
    format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}")
}
