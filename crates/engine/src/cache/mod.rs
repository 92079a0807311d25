//! Lean, shareable caches of watched objects.
//!
//! Objects are stripped of `metadata.managedFields` and the `kubectl apply` annotation before
//! they enter the store: a Rust store keeps managedFields as a JSON value tree, several times
//! the size of the rest of a small object, and no controller reads them.
//!
//! One [`SharedCache`] per kind serves every controller that needs the kind: the controller that
//! reconciles it, and parents that own it (through [`SharedCache::children_of`], backed by an
//! owner index, instead of scanning the store).
//!
//! The objects live in the engine's own [`Store`], not kube's reflector store, which keys each
//! object by a reference carrying the resourceVersion and uid strings as well, and builds a
//! complete second copy of the kind on every re-list before swapping it in: at 76,000 objects a
//! watch that falls behind (410 Gone) would double the process for a moment.
//!
//! The parts, each building only on those before it: `meta` (what every object and reference is
//! stripped to), `change` (what subscribers hear), `pack` (an object held compressed), `store`,
//! `owner_index`, and `shared`, the [`SharedCache`] that keeps them current.

mod change;
#[cfg(test)]
mod fixtures;
mod meta;
mod owner_index;
mod pack;
mod shared;
mod store;

pub use change::{Change, until_listed};
pub use meta::{SharedRef, lean_ref};
pub use shared::SharedCache;
