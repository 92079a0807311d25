//! The images the extension delivers into shoots: one image vector, embedded from `images.yaml`,
//! which a landscape overwrites by image name, as it does every Gardener extension's (air-gapped
//! landscapes mirror every image and point each name at their mirror).
//!
//! Format and semantics are Gardener's `pkg/utils/imagevector`, read at gardener/gardener
//! 0a555d1e:
//!
//! - `types.go` `ImageSource` and `imagevector.go` `Read`: a file `images:` (and `caBundle`,
//!   Gardener's CA for pulling its charts, which is accepted and unused: no chart is pulled
//!   here), each entry `name`, `ref` or `repository` with an optional `tag`, `runtimeVersion`,
//!   `targetVersion`, `architectures` and `version`. `sourceRepository` and `labels` (the CVE
//!   categorisation Gardener's tooling writes) are accepted and unused, as Gardener's decoder
//!   does. Any other field is refused: a misspelt `repositry` must not leave an image where it
//!   was, in a landscape that cannot reach it.
//! - `imagevector_validation.go` `validateImageSource`: a name; a `ref` or a `repository`; no
//!   `repository` or `tag` beside a `ref`; nothing given empty. The version constraints are not
//!   checked, since they never take part in a lookup here (below).
//! - `imagevector.go` `WithEnvOverride`, `MergeImageVectors` and `mergeImageSources`: the file
//!   `IMAGEVECTOR_OVERWRITE` names overrides the entries with the same name, runtime version,
//!   target version and architectures, field by field: its `repository` and `tag` where it gives
//!   them, the embedded ones where it does not (so a tag-less entry moves an image to another
//!   registry and keeps its tag); a `ref` replaces both, and a `repository` without `ref` drops
//!   the embedded `ref`. Entries for names this extension does not deliver are added and never
//!   asked for; a warning names them, since a misspelt name is the likely cause.
//! - `FindImage` without options, as extensions look up the images of their shoot components
//!   (registry-cache: `FindImage(ImageNameRegistry)`): version constraints are not evaluated
//!   without a version, and the architecture asked for is Gardener's default, amd64. Among the
//!   entries of a name, one for amd64 alone beats a multi-architecture one (no `architectures`
//!   means amd64 and arm64), one without amd64 never matches, and the first wins a tie.
//!   `ToImage` and `Image.String`: the `ref`, else `repository:tag`, `repository@tag` for a
//!   `sha256:` digest, or the bare repository when no entry gives a tag.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::IgnoredAny;

/// The variable naming the overwrite file (Gardener's `imagevector.OverrideEnv`).
pub const OVERWRITE_ENV: &str = "IMAGEVECTOR_OVERWRITE";

const EMBEDDED: &str = include_str!("images.yaml");
/// Gardener's default architecture for a lookup that names none.
const DEFAULT_ARCHITECTURE: &str = "amd64";
/// The architectures of an entry that names none.
const ALL_ARCHITECTURES: [&str; 2] = ["amd64", "arm64"];
/// Gardener's `SHA256TagPrefix`: such a tag is a digest, joined with `@`.
const DIGEST_PREFIX: &str = "sha256:";

/// Why the image vector cannot be used; each stops the operator at startup.
#[derive(Debug, thiserror::Error)]
pub enum ImageVectorError {
    #[error("cannot read the image vector overwrite {path} (named by {OVERWRITE_ENV}): {source}")]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{origin}: {message}")]
    Invalid { origin: String, message: String },
    #[error("the image vector has no image {0:?} for amd64")]
    Missing(String),
    #[error("the image vector entry {name:?} names a registry, which {reason}")]
    NotARegistry { name: String, reason: &'static str },
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct VectorFile {
    #[serde(default)]
    images: Vec<ImageSource>,
    #[serde(default, rename = "caBundle")]
    _ca_bundle: IgnoredAny,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ImageSource {
    name: String,
    #[serde(default, rename = "ref")]
    reference: Option<String>,
    #[serde(default)]
    repository: Option<String>,
    #[serde(default)]
    tag: Option<String>,
    #[serde(default)]
    runtime_version: Option<String>,
    #[serde(default)]
    target_version: Option<String>,
    #[serde(default)]
    architectures: Option<Vec<String>>,
    #[serde(default, rename = "version")]
    _version: IgnoredAny,
    #[serde(default, rename = "sourceRepository")]
    _source_repository: IgnoredAny,
    #[serde(default, rename = "labels")]
    _labels: IgnoredAny,
}

/// What makes two entries one for `MergeImageVectors`.
type Key<'a> = (
    &'a str,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a [String]>,
);

impl ImageSource {
    fn key(&self) -> Key<'_> {
        (
            &self.name,
            self.runtime_version.as_deref(),
            self.target_version.as_deref(),
            self.architectures.as_deref(),
        )
    }

    fn validate(&self) -> Result<(), String> {
        let empty = |field: &str, value: &Option<String>| {
            if value.as_deref() == Some("") {
                Err(format!("{field} must not be empty"))
            } else {
                Ok(())
            }
        };
        if self.name.is_empty() {
            return Err("name is required".into());
        }
        empty("ref", &self.reference)?;
        empty("repository", &self.repository)?;
        empty("tag", &self.tag)?;
        match (&self.reference, &self.repository, &self.tag) {
            (None, None, _) => Err("either ref or repository is required".into()),
            (Some(_), Some(_), _) => Err("repository is not allowed with ref".into()),
            (Some(_), _, Some(_)) => Err("tag is not allowed with ref".into()),
            _ => Ok(()),
        }
    }

    /// Gardener's `mergeImageSources(old=self, override=new)`.
    fn overwritten_by(&self, new: ImageSource) -> ImageSource {
        let reference = match (new.reference, &new.repository) {
            (Some(reference), _) => Some(reference),
            (None, None) => self.reference.clone(),
            (None, Some(_)) => None,
        };
        let (repository, tag) = if reference.is_some() {
            (None, None)
        } else {
            (
                new.repository.or_else(|| self.repository.clone()),
                new.tag.or_else(|| self.tag.clone()),
            )
        };
        ImageSource {
            reference,
            repository,
            tag,
            ..new
        }
    }

    /// Gardener's `checkArchitectureConstraint` for the default architecture: the better the
    /// fit, the higher; `None` when the entry is not for it.
    fn fit(&self) -> Option<u8> {
        let names: Vec<&str> = match &self.architectures {
            Some(listed) => listed.iter().map(String::as_str).collect(),
            None => ALL_ARCHITECTURES.to_vec(),
        };
        match names.as_slice() {
            [only] if *only == DEFAULT_ARCHITECTURE => Some(2),
            [_, _, ..] if names.contains(&DEFAULT_ARCHITECTURE) => Some(1),
            _ => None,
        }
    }

    /// Gardener's `Image.String`; `None` for an entry without ref and repository, which
    /// `validate` refuses and merging never makes.
    fn pull_reference(&self) -> Option<String> {
        Some(match (&self.reference, &self.repository, &self.tag) {
            (Some(reference), _, _) => reference.clone(),
            (None, Some(repository), Some(tag)) if tag.starts_with(DIGEST_PREFIX) => {
                format!("{repository}@{tag}")
            }
            (None, Some(repository), Some(tag)) => format!("{repository}:{tag}"),
            (None, Some(repository), None) => repository.clone(),
            (None, None, _) => return None,
        })
    }
}

/// A list of image sources, as Gardener's `ImageVector`.
#[derive(Clone, Debug)]
pub struct ImageVector(Vec<ImageSource>);

impl ImageVector {
    /// The vector built into the operator (`images.yaml`), without an overwrite.
    pub fn embedded() -> Result<Self, ImageVectorError> {
        Self::parse(EMBEDDED, "the embedded image vector")
    }

    /// The embedded vector with the overwrite [`OVERWRITE_ENV`] names, if it names one (as
    /// Gardener, an empty value names none).
    pub fn embedded_with_env_overwrite() -> Result<Self, ImageVectorError> {
        let vector = Self::embedded()?;
        match std::env::var_os(OVERWRITE_ENV).filter(|path| !path.is_empty()) {
            Some(path) => vector.with_overwrite_file(Path::new(&path)),
            None => Ok(vector),
        }
    }

    /// This vector with the overwrite in the file `path`.
    pub(crate) fn with_overwrite_file(self, path: &Path) -> Result<Self, ImageVectorError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ImageVectorError::Unreadable {
                path: path.to_owned(),
                source,
            })?;
        let origin = format!(
            "the image vector overwrite {} (named by {OVERWRITE_ENV})",
            path.display()
        );
        let overwrite = Self::parse(&text, &origin)?;
        let foreign: Vec<&str> = overwrite
            .names()
            .filter(|name| !self.names().any(|known| known == *name))
            .collect();
        if !foreign.is_empty() {
            tracing::warn!(
                path = %path.display(),
                names = ?foreign,
                "the image vector overwrite names images the extension does not deliver; they are ignored"
            );
        }
        Ok(self.overwritten_by(overwrite))
    }

    /// Parses and checks a vector; `origin` says where it came from in errors.
    pub(crate) fn parse(text: &str, origin: &str) -> Result<Self, ImageVectorError> {
        let invalid = |message: String| ImageVectorError::Invalid {
            origin: origin.to_owned(),
            message,
        };
        // An empty file is an empty vector, as Gardener's decoder reads it.
        let file: Option<VectorFile> =
            serde_yaml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let images = file.unwrap_or_default().images;
        for (i, source) in images.iter().enumerate() {
            source
                .validate()
                .map_err(|message| invalid(format!("images[{i}]: {message}")))?;
        }
        Ok(Self(images))
    }

    /// Gardener's `MergeImageVectors(self, overwrite)`.
    pub(crate) fn overwritten_by(self, overwrite: ImageVector) -> Self {
        let mut merged = self.0;
        for entry in overwrite.0 {
            match merged.iter().position(|old| old.key() == entry.key()) {
                Some(i) => merged[i] = merged[i].overwritten_by(entry),
                None => merged.push(entry),
            }
        }
        Self(merged)
    }

    /// The image `name` as a pullable reference: Gardener's `FindImage(name)` without options.
    pub(crate) fn find(&self, name: &str) -> Result<String, ImageVectorError> {
        self.entry(name)?
            .pull_reference()
            .ok_or_else(|| ImageVectorError::Missing(name.to_owned()))
    }

    /// The entry `name` as a registry (a `repository` alone), found as [`Self::find`] finds an
    /// image. For software that takes a registry and appends image names and tags it chooses
    /// itself: a tag or a `ref` there would be silently dropped, so either is refused.
    pub(crate) fn find_registry(&self, name: &str) -> Result<String, ImageVectorError> {
        let refused = |reason| ImageVectorError::NotARegistry {
            name: name.to_owned(),
            reason,
        };
        let source = self.entry(name)?;
        match (&source.reference, &source.repository, &source.tag) {
            (Some(_), _, _) => Err(refused("takes a repository, not a ref")),
            (None, _, Some(_)) => Err(refused("takes no tag")),
            (None, Some(repository), None) if repository.ends_with('/') => {
                Err(refused("must not end with '/'"))
            }
            (None, Some(repository), None) => Ok(repository.clone()),
            (None, None, None) => Err(ImageVectorError::Missing(name.to_owned())),
        }
    }

    /// The entry `FindImage(name)` chooses.
    fn entry(&self, name: &str) -> Result<&ImageSource, ImageVectorError> {
        let mut best: Option<(u8, &ImageSource)> = None;
        for source in self.0.iter().filter(|source| source.name == name) {
            if let Some(fit) = source.fit()
                && best.is_none_or(|(best_fit, _)| fit > best_fit)
            {
                best = Some((fit, source));
            }
        }
        best.map(|(_, source)| source)
            .ok_or_else(|| ImageVectorError::Missing(name.to_owned()))
    }

    /// The names of its entries, in order, each as often as it is listed.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|source| source.name.as_str())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn vector(text: &str) -> ImageVector {
        ImageVector::parse(text, "test").unwrap()
    }

    /// [`BASE`] with the overwrite `text`.
    fn overwritten(text: &str) -> ImageVector {
        vector(BASE).overwritten_by(vector(text))
    }

    /// `operator` and `helper` as found.
    fn both(vector: &ImageVector) -> [String; 2] {
        ["operator", "helper"].map(|name| vector.find(name).unwrap())
    }

    fn error(text: &str) -> String {
        ImageVector::parse(text, "test").unwrap_err().to_string()
    }

    const BASE: &str = r#"
images:
- name: operator
  sourceRepository: github.com/example/operator
  repository: docker.io/example/operator
  tag: "1.0.0"
  labels:
  - name: gardener.cloud/cve-categorisation
    value: {network_exposure: private}
- name: helper
  repository: docker.io/library/helper
  tag: "2.0"
"#;

    #[test]
    fn the_embedded_vector_parses() {
        let embedded = ImageVector::embedded().unwrap();
        for name in embedded.names() {
            let image = embedded.find(name).unwrap();
            let registry = embedded.find_registry(name).is_ok();
            assert!(
                image.contains(':') != registry,
                "{name}: {image} is neither a tagged image nor a registry"
            );
        }
    }

    #[test]
    fn a_registry_is_a_repository_alone() {
        let base =
            vector("images:\n- name: sidecars\n  repository: registry.example/sig-storage\n");
        assert_eq!(
            base.find_registry("sidecars").unwrap(),
            "registry.example/sig-storage"
        );
        let moved = base.clone().overwritten_by(vector(
            "images:\n- name: sidecars\n  repository: mirror.example:5000/sig-storage\n",
        ));
        assert_eq!(
            moved.find_registry("sidecars").unwrap(),
            "mirror.example:5000/sig-storage"
        );
        let refused = |overwrite: &str| {
            base.clone()
                .overwritten_by(vector(overwrite))
                .find_registry("sidecars")
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            refused("images:\n- name: sidecars\n  repository: r\n  tag: v1\n"),
            "the image vector entry \"sidecars\" names a registry, which takes no tag"
        );
        assert_eq!(
            refused("images:\n- name: sidecars\n  ref: r/x:v1\n"),
            "the image vector entry \"sidecars\" names a registry, which takes a repository, not a ref"
        );
        assert_eq!(
            refused("images:\n- name: sidecars\n  repository: mirror.example/\n"),
            "the image vector entry \"sidecars\" names a registry, which must not end with '/'"
        );
        assert!(matches!(
            base.find_registry("elsewhere"),
            Err(ImageVectorError::Missing(name)) if name == "elsewhere"
        ));
    }

    #[test]
    fn an_overwrite_changes_repository_and_tag_by_name() {
        let merged = overwritten(
            "images:\n- name: operator\n  repository: mirror.example/operator\n  tag: \"1.0.1\"\n",
        );
        assert_eq!(
            both(&merged),
            [
                "mirror.example/operator:1.0.1",
                "docker.io/library/helper:2.0"
            ]
        );
    }

    #[test]
    fn a_tag_less_overwrite_moves_the_image_and_keeps_its_tag() {
        let merged = overwritten("images:\n- name: helper\n  repository: mirror.example/helper\n");
        assert_eq!(merged.find("helper").unwrap(), "mirror.example/helper:2.0");
        // With no tag anywhere, the bare repository (the registry's `latest`), as Gardener.
        let bare = vector("images:\n- name: helper\n  repository: mirror.example/helper\n");
        assert_eq!(bare.find("helper").unwrap(), "mirror.example/helper");
    }

    #[test]
    fn refs_and_digests() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let merged = overwritten(&format!(
            "images:\n- name: operator\n  repository: docker.io/example/operator\n  tag: \"{digest}\"\n\
             - name: helper\n  ref: mirror.example/helper@{digest}\n"
        ));
        assert_eq!(
            both(&merged),
            [
                format!("docker.io/example/operator@{digest}"),
                format!("mirror.example/helper@{digest}")
            ]
        );
        // A repository without ref replaces a ref, and takes no tag from it.
        let back = merged.overwritten_by(vector(
            "images:\n- name: helper\n  repository: docker.io/library/helper\n",
        ));
        assert_eq!(back.find("helper").unwrap(), "docker.io/library/helper");
    }

    #[test]
    fn unknown_names_change_nothing() {
        let merged = overwritten(
            "images:\n- name: elsewhere\n  repository: mirror.example/elsewhere\n  tag: \"1\"\n",
        );
        assert_eq!(both(&merged), both(&vector(BASE)));
        assert!(merged.names().any(|name| name == "elsewhere"));
    }

    #[test]
    fn architectures_as_gardener_finds_them() {
        // An entry for amd64 alone wins over the multi-architecture one, whatever the order;
        // one for arm64 alone is never chosen without an architecture to ask for.
        let merged = overwritten(
            "images:\n- name: helper\n  repository: arm.example/helper\n  architectures: [arm64]\n\
             - name: helper\n  repository: amd.example/helper\n  architectures: [amd64]\n",
        );
        assert_eq!(merged.find("helper").unwrap(), "amd.example/helper");
        let arm_only = vector("images:\n- name: x\n  repository: r\n  architectures: [arm64]\n");
        assert!(matches!(
            arm_only.find("x"),
            Err(ImageVectorError::Missing(name)) if name == "x"
        ));
    }

    #[test]
    fn a_wrong_file_is_refused_naming_the_entry() {
        assert_eq!(
            error("images:\n- name: x\n  repository: r\n  tag: \"\"\n"),
            "test: images[0]: tag must not be empty"
        );
        // A tag alone does not say where to pull from: Gardener refuses it in an overwrite too.
        assert_eq!(
            error("images:\n- name: x\n  tag: \"1\"\n"),
            "test: images[0]: either ref or repository is required"
        );
        assert_eq!(
            error("images:\n- name: x\n  ref: a/b@sha256:0\n  tag: \"1\"\n"),
            "test: images[0]: tag is not allowed with ref"
        );
        assert_eq!(
            error("images:\n- repository: r\n  name: \"\"\n"),
            "test: images[0]: name is required"
        );
        let misspelt = error("images:\n- name: x\n  repositry: r\n");
        assert!(
            misspelt.starts_with("test: images[0]: unknown field `repositry`"),
            "{misspelt}"
        );
        let listed = error("images:\n- name: x\n  repository: [r]\n");
        assert!(listed.contains("invalid type: sequence"), "{listed}");
    }

    #[test]
    fn an_empty_overwrite_changes_nothing() {
        let merged = overwritten("");
        assert_eq!(merged.names().collect::<Vec<_>>(), ["operator", "helper"]);
    }

    #[test]
    fn an_overwrite_file_is_read_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("images_overwrite.yaml");
        std::fs::write(
            &path,
            "images:\n- name: operator\n  repository: mirror.example/operator\n",
        )
        .unwrap();
        let merged = vector(BASE).with_overwrite_file(&path).unwrap();
        assert_eq!(
            merged.find("operator").unwrap(),
            "mirror.example/operator:1.0.0"
        );
        let refused = |path: &Path, reason: &str| {
            let message = vector(BASE)
                .with_overwrite_file(path)
                .unwrap_err()
                .to_string();
            assert!(message.contains(reason), "{message}");
        };
        let missing = dir.path().join("absent.yaml");
        refused(
            &missing,
            &format!(
                "cannot read the image vector overwrite {} (named by IMAGEVECTOR_OVERWRITE)",
                missing.display()
            ),
        );
        std::fs::write(&path, "images: {name: operator}\n").unwrap();
        refused(
            &path,
            &format!(
                "the image vector overwrite {} (named by IMAGEVECTOR_OVERWRITE): images: invalid type",
                path.display()
            ),
        );
    }
}
