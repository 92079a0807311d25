//! Packing: an object held as its JSON, LZ4-compressed against the JSON of the kind's first
//! packed object ([`Store`](super::Store) says when and why).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use kube::ResourceExt;

use crate::object::Object;

/// How one object is held.
pub(super) enum Held<K> {
    Decoded(Arc<K>),
    /// JSON, LZ4-compressed against [`Packing::dictionary`], its length prepended.
    Packed(Box<[u8]>),
}

#[derive(Default)]
pub(super) struct Packing {
    /// The JSON of the first object packed; every later one is compressed against it, so it
    /// never changes.
    dictionary: OnceLock<Box<[u8]>>,
    /// Whether an object that would not decode from its packed form has been reported.
    reported: AtomicBool,
}

impl<K: Object> Held<K> {
    /// The object, decoded again if packed (against `packing`'s dictionary).
    pub(super) fn decoded(&self, packing: Option<&Packing>) -> Option<Arc<K>> {
        match self {
            Held::Decoded(obj) => Some(obj.clone()),
            Held::Packed(bytes) => {
                let dictionary = packing
                    .and_then(|p| p.dictionary.get().map(|d| &**d))
                    .unwrap_or_default();
                match unpack(bytes, dictionary) {
                    Ok(obj) => Some(Arc::new(obj)),
                    // Unreachable: `pack` keeps only what decoded back.
                    Err(err) => {
                        tracing::error!(kind = %K::kind(&()), error = %err, "a packed object does not decode");
                        None
                    }
                }
            }
        }
    }
}

impl Packing {
    /// `obj` packed, or None (reported once per kind) when its JSON does not decode back into
    /// it, for which it is held decoded: the store must never lose an object.
    pub(super) fn pack<K: Object>(&self, obj: &K) -> Option<Box<[u8]>> {
        let json = match serde_json::to_vec(obj) {
            Ok(json) => json,
            Err(err) => return self.refuse::<K>(obj, &err),
        };
        let dictionary = self
            .dictionary
            .get_or_init(|| json.clone().into_boxed_slice());
        let packed = lz4_flex::block::compress_prepend_size_with_dict(&json, dictionary);
        match unpack::<K>(&packed, dictionary) {
            Ok(_) => Some(packed.into_boxed_slice()),
            Err(err) => self.refuse::<K>(obj, &err),
        }
    }

    fn refuse<K: Object>(&self, obj: &K, err: &dyn std::fmt::Display) -> Option<Box<[u8]>> {
        if !self.reported.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                kind = %K::kind(&()),
                name = %obj.name_any(),
                error = %err,
                "an object does not survive packing; objects like it are held decoded"
            );
        }
        None
    }
}

/// The error of a packed object that does not decode.
#[derive(Debug, thiserror::Error)]
enum UnpackError {
    #[error("decompressing: {0}")]
    Decompress(#[from] lz4_flex::block::DecompressError),
    #[error("decoding: {0}")]
    Decode(#[from] serde_json::Error),
}

fn unpack<K: Object>(packed: &[u8], dictionary: &[u8]) -> Result<K, UnpackError> {
    let json = lz4_flex::block::decompress_size_prepended_with_dict(packed, dictionary)?;
    Ok(serde_json::from_slice(&json)?)
}
