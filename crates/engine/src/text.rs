//! Bounded texts for conditions and Events.
//!
//! An error's text can be arbitrarily large (a proxy's HTML page, a dump of a big answer); copied
//! into a condition it can push the object past etcd's size limit, after which every status write
//! fails and whatever the status said last stays. Kubernetes allows 32 KiB per condition message
//! and 1 KiB per Event note; the engine keeps both at 1 KiB, which is plenty for a person.

/// The longest condition message or Event note the engine writes, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 1024;

const ELLIPSIS: &str = " …";

/// `text`, cut at a character boundary to at most [`MAX_MESSAGE_BYTES`], marked when cut.
///
/// ```
/// use reconcile_engine::text::{MAX_MESSAGE_BYTES, bounded};
///
/// assert_eq!(bounded("short"), "short");
/// let long = "ä".repeat(2000);
/// let cut = bounded(&long);
/// assert!(cut.len() <= MAX_MESSAGE_BYTES);
/// assert!(cut.ends_with(" …"));
/// ```
pub fn bounded(text: &str) -> String {
    if text.len() <= MAX_MESSAGE_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_MESSAGE_BYTES - ELLIPSIS.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{ELLIPSIS}", &text[..end])
}
