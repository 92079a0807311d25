//! The changes a cache announces to its subscribers, and how a subscriber learns that it has
//! handled the initial list.

use std::sync::Arc;

use futures::StreamExt;
use kube::Resource;
use tokio::sync::{mpsc, watch};

use super::meta::SharedRef;

/// A change seen by a [`SharedCache`](crate::SharedCache), delivered to its subscribers after the
/// store has it.
#[derive(Debug, Clone)]
pub enum Change<K: Resource<DynamicType = ()>> {
    /// Created or updated.
    Applied(Arc<K>),
    /// Present at a (re)list, or when the subscription began: read it from the cache when
    /// needed ([`SharedCache::object_of`](crate::SharedCache::object_of)). A reference rather than the object, so that announcing a
    /// whole list of a packed kind never decodes the whole list at once.
    Present(SharedRef<K>),
    /// Deleted.
    Deleted(Arc<K>),
    /// Every object of a (re)list has been announced before this: a subscriber that has handled
    /// the changes up to here has seen the whole list (`until_listed`).
    Listed,
}

/// `rx` without its [`Change::Listed`] markers, and a future that resolves at the first one.
/// The marker is taken from `rx` only when the stream's consumer asks for the change after the
/// last one listed, so the future says the consumer has handled the initial list, not merely
/// that it was sent: a controller whose workers waited only for the cache would start while
/// the list's events were still on their way into its queue, and pass twice over whatever it
/// picked first.
pub fn until_listed<K: Resource<DynamicType = ()> + Send + Sync + 'static>(
    rx: mpsc::UnboundedReceiver<Change<K>>,
) -> (
    impl futures::Stream<Item = Change<K>> + Send + 'static,
    futures::future::BoxFuture<'static, ()>,
) {
    let (listed, mut seen) = watch::channel(false);
    let changes = receiver_stream(rx).filter_map(move |change| {
        std::future::ready(match change {
            Change::Listed => {
                listed.send_replace(true);
                None
            }
            change => Some(change),
        })
    });
    // A dropped stream ends the wait too: nothing will be handled any more.
    let ready = Box::pin(async move {
        let _ = seen.wait_for(|listed| *listed).await;
    });
    (changes, ready)
}

/// `rx` as a stream.
pub(crate) fn receiver_stream<T: Send + 'static>(
    rx: mpsc::UnboundedReceiver<T>,
) -> impl futures::Stream<Item = T> + Send + 'static {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|t| (t, rx)) })
}
