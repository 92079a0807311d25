//! Verification on request: another controller (the Gardener Extension) that finds an SVM's
//! published credentials failing asks for the SVM's pass now, instead of waiting up to a sync
//! period for the SVM controller to notice. The pass's `SecretReady` step re-verifies the seed
//! Secret against ONTAP and repairs it (Secret first), and the Secret's change reaches whoever
//! watches it.
//!
//! An in-process channel into the SVM controller's queue (the engine's
//! [`reconcile_engine::Registration::triggers`]): nothing is written to the API server, the
//! queue deduplicates repeated requests, and a request for an object being reconciled marks it
//! to run again once the current pass ends.

use std::sync::{Arc, Mutex, PoisonError};

use futures::Stream;
use kube::runtime::reflector::ObjectRef;
use tokio::sync::mpsc;

use crate::api::StorageVirtualMachine;

type Requests = mpsc::UnboundedReceiver<ObjectRef<StorageVirtualMachine>>;

/// The sending side is cheap to clone; the stream is taken once, by the SVM controller's
/// registration.
#[derive(Clone, Debug)]
pub struct VerifyRequests {
    sender: mpsc::UnboundedSender<ObjectRef<StorageVirtualMachine>>,
    receiver: Arc<Mutex<Option<Requests>>>,
}

impl Default for VerifyRequests {
    fn default() -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        Self {
            sender,
            receiver: Arc::new(Mutex::new(Some(receiver))),
        }
    }
}

impl VerifyRequests {
    /// Asks for a pass of the StorageVirtualMachine `namespace/name` now. Without a running SVM
    /// controller (declarations only) the request is dropped: its periodic pass remains.
    pub fn request(&self, namespace: &str, name: &str) {
        let object = ObjectRef::new(name).within(namespace);
        if self.sender.send(object).is_err() {
            tracing::debug!(
                namespace,
                name,
                "no SVM controller takes verification requests"
            );
        }
    }

    /// The requests, for the SVM controller's queue; empty for every caller after the first.
    pub(crate) fn stream(
        &self,
    ) -> impl Stream<Item = ObjectRef<StorageVirtualMachine>> + Send + 'static {
        let receiver = self
            .receiver
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        futures::stream::unfold(receiver, |receiver| async move {
            let mut receiver = receiver?;
            let next = receiver.recv().await?;
            Some((next, Some(receiver)))
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[tokio::test]
    async fn requests_reach_the_one_stream() {
        let requests = VerifyRequests::default();
        let mut stream = Box::pin(requests.stream());
        requests.clone().request("shoot--p--s", "ontap");
        let got = stream.next().await.unwrap();
        assert_eq!(got, ObjectRef::new("ontap").within("shoot--p--s"));
        let mut second = Box::pin(requests.stream());
        assert!(second.next().await.is_none(), "taken once");
    }
}
