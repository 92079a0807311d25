//! What the Shoot itself must say for its providerConfig: one verdict, which the seed's plan
//! and the garden's admission both ask for.

use super::api::{METAL_PROJECT_ANNOTATION, ShootView};
use super::config::{ExtensionConfig, SvmSharing};
use super::naming;

/// Why the Shoot cannot use its configuration's per-project SVM.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShootRefusal {
    #[error("a per-project SVM needs the Shoot annotation {METAL_PROJECT_ANNOTATION}")]
    MissingProject,
    // metal-stack's projects are UUIDs, and their SVMs `p` and 32 hex digits: any other value
    // would name an SVM of another shape — perhaps a tenant's — for the project namespace.
    #[error(
        "the Shoot annotation {METAL_PROJECT_ANNOTATION} ({0:?}) is not a metal-stack project id (a UUID)"
    )]
    NotAProjectId(String),
    #[error(
        "the Shoot annotation {METAL_PROJECT_ANNOTATION} ({annotation:?}) disagrees with spec.provider.infrastructureConfig.projectID ({infrastructure:?})"
    )]
    Disagrees {
        annotation: String,
        infrastructure: String,
    },
}

impl ShootRefusal {
    /// The field of the Shoot to correct, as `kubectl explain` spells it.
    pub fn field(&self) -> String {
        format!("metadata.annotations[{METAL_PROJECT_ANNOTATION}]")
    }
}

/// The shoot's metal-stack project when its SVM is the project's. The annotation is the shoot
/// owner's to write; where provider-metal's `infrastructureConfig.projectID` (immutable once the
/// shoot exists) is there, the two must agree. Whether the Gardener project may use it is
/// decided by the project object's binding, in the seed.
pub fn metal_project<'a>(
    config: &ExtensionConfig,
    shoot: &'a ShootView,
) -> Result<Option<&'a str>, ShootRefusal> {
    if config.sharing == SvmSharing::PerShoot {
        return Ok(None);
    }
    let project = shoot.metal_project().ok_or(ShootRefusal::MissingProject)?;
    if !naming::is_metal_project_id(project) {
        return Err(ShootRefusal::NotAProjectId(project.to_owned()));
    }
    match shoot.infrastructure_project_id() {
        Some(id) if id != project => Err(ShootRefusal::Disagrees {
            annotation: project.to_owned(),
            infrastructure: id.to_owned(),
        }),
        _ => Ok(Some(project)),
    }
}
