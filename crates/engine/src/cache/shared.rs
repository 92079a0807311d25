//! The shared cache: a store of one kind kept current by one watch, its owner index, and the
//! subscribers that hear of every change.

use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;

use super::change::Change;
use super::meta::strip_metadata;
use super::owner_index::{IndexBuild, OwnerIndex};
use super::store::Store;
use crate::object::Object;

type Subscribers<K> = Mutex<Vec<mpsc::UnboundedSender<Change<K>>>>;

/// A watched, stripped, owner-indexed store of one kind, shared by every controller that needs
/// the kind. Cloning is cheap; the watch stops when the last clone is dropped.
///
/// ```no_run
/// # async fn demo(client: kube::Client) {
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::{Api, runtime::watcher};
/// use reconcile_engine::SharedCache;
///
/// let cms = SharedCache::spawn(Api::<ConfigMap>::all(client), watcher::Config::default());
/// cms.wait_until_ready().await;
/// for child in cms.children_of("uid-of-some-owner") {
///     println!("{}", child.metadata.name.as_deref().unwrap_or_default());
/// }
/// # }
/// ```
pub struct SharedCache<K: Resource<DynamicType = ()> + 'static> {
    inner: Arc<CacheInner<K>>,
}

impl<K: Resource<DynamicType = ()> + 'static> Clone for SharedCache<K> {
    fn clone(&self) -> Self {
        SharedCache {
            inner: self.inner.clone(),
        }
    }
}

struct CacheInner<K: Resource<DynamicType = ()> + 'static> {
    store: Store<K>,
    trim: Trim<K>,
    ready: watch::Receiver<bool>,
    index: Arc<OwnerIndex<K>>,
    subscribers: Arc<Subscribers<K>>,
    /// Starts the watch; taken by the first [`SharedCache::start`].
    pending: Mutex<Option<StartWatch>>,
    task: Mutex<Option<AbortHandle>>,
}

type StartWatch = Box<dyn FnOnce() -> AbortHandle + Send>;

/// What the cache drops of each object before keeping it, once set.
type Trim<K> = Arc<std::sync::OnceLock<fn(&mut K)>>;

impl<K: Resource<DynamicType = ()> + 'static> Drop for CacheInner<K> {
    fn drop(&mut self) {
        if let Some(task) = self
            .task
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
    }
}

impl<K: Object> SharedCache<K> {
    /// Starts watching `api` (on the current tokio runtime) into a new cache.
    pub fn spawn(api: Api<K>, config: watcher::Config) -> Self {
        let cache = Self::new(api, config);
        cache.start();
        cache
    }

    /// A cache of `api` that watches nothing until [`start`](Self::start): controllers and
    /// triggers can be wired to it before the process decides to talk to the API server.
    pub fn new(api: Api<K>, config: watcher::Config) -> Self {
        let store = Store::default();
        let (ready_tx, ready) = watch::channel(false);
        let index = Arc::new(OwnerIndex::default());
        let subscribers: Arc<Subscribers<K>> = Arc::new(Mutex::new(Vec::new()));
        let trim: Trim<K> = Arc::default();
        let kept = KeptCurrent {
            trim: trim.clone(),
            store: store.clone(),
            index: index.clone(),
            subscribers: subscribers.clone(),
            ready: ready_tx,
        };
        let start: StartWatch =
            Box::new(move || tokio::spawn(drive(api, config, kept)).abort_handle());
        SharedCache {
            inner: Arc::new(CacheInner {
                store,
                trim,
                ready,
                index,
                subscribers,
                pending: Mutex::new(Some(start)),
                task: Mutex::new(None),
            }),
        }
    }

    /// Starts the watch (on the current tokio runtime); later calls do nothing.
    pub fn start(&self) {
        let Some(start) = self
            .inner
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return;
        };
        let task = start();
        *self
            .inner
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(task);
    }

    /// Keeps the objects packed from now on (see the store's documentation): for a kind with tens of thousands
    /// of objects that reconciles read one at a time. A kind that a reconcile scans whole
    /// (a `Store` state) is better held decoded.
    pub fn pack_objects(&self) {
        self.inner.store.pack_objects();
    }

    /// Drops what `trim` removes from every object before it is kept, from the watch's start
    /// on: for objects whose bulk no reader of the cache needs (a Secret's data, read by name
    /// when needed), and which whoever may label one could otherwise grow without bound. Set
    /// once; a second call keeps the first.
    pub fn trim_objects(&self, trim: fn(&mut K)) {
        let _ = self.inner.trim.set(trim);
    }

    /// Whether the initial list is in.
    pub fn is_ready(&self) -> bool {
        *self.inner.ready.borrow()
    }

    /// The store (read side).
    pub fn store(&self) -> &Store<K> {
        &self.inner.store
    }

    /// The owner index.
    pub fn owner_index(&self) -> &OwnerIndex<K> {
        &self.inner.index
    }

    /// Cached objects whose `ownerReferences` name `owner_uid`.
    pub fn children_of(&self, owner_uid: &str) -> Vec<Arc<K>> {
        self.inner
            .index
            .children(owner_uid)
            .iter()
            .filter_map(|r| self.inner.store.get(r))
            .collect()
    }

    /// The cached object at `obj_ref`.
    pub fn get(&self, obj_ref: &ObjectRef<K>) -> Option<Arc<K>> {
        self.inner.store.get(obj_ref)
    }

    /// The object `change` is about, read from this cache for [`Change::Present`]; None for
    /// [`Change::Listed`] and for an object deleted since. A method of the cache rather than of
    /// the change, so that what subscribers hear needs nothing of the cache that sends it.
    pub fn object_of(&self, change: &Change<K>) -> Option<Arc<K>> {
        match change {
            Change::Applied(obj) | Change::Deleted(obj) => Some(obj.clone()),
            Change::Present(key) => self.get(key),
            Change::Listed => None,
        }
    }

    /// Whether an object is cached at `obj_ref`, without decoding it.
    pub fn contains(&self, obj_ref: &ObjectRef<K>) -> bool {
        self.inner.store.contains(obj_ref)
    }

    /// Resolves once the initial list is in the store. Every waiter is woken (a controller and a
    /// test, two controllers sharing the cache): kube's reflector store, which this store
    /// replaced, kept a single waker, so one of two waiters could sleep for ever.
    pub async fn wait_until_ready(&self) {
        let mut ready = self.inner.ready.clone();
        // An error means the watch task ended (cache dropped): nothing left to wait for.
        let _ = ready.wait_for(|ready| *ready).await;
    }

    /// A stream of changes: first every object already cached, then every change. Duplicates
    /// are possible around the subscription instant; subscribers must be idempotent, as every
    /// Kubernetes event consumer must.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Change<K>> {
        let (tx, rx) = mpsc::unbounded_channel();
        // Holding the lock while replaying orders the replay before any later broadcast.
        let mut subscribers = self
            .inner
            .subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for key in self.inner.store.keys() {
            let _ = tx.send(Change::Present(key));
        }
        // Listed already: the replay was the whole list. Otherwise the list's end announces it.
        if *self.inner.ready.borrow() {
            let _ = tx.send(Change::Listed);
        }
        subscribers.push(tx);
        rx
    }
}

/// What the cache's watch keeps current: the store, its owner index, the subscribers it tells of
/// every change, and whether the initial list is in.
struct KeptCurrent<K: Resource<DynamicType = ()> + 'static> {
    trim: Trim<K>,
    store: Store<K>,
    index: Arc<OwnerIndex<K>>,
    subscribers: Arc<Subscribers<K>>,
    ready: watch::Sender<bool>,
}

async fn drive<K: Object>(api: Api<K>, config: watcher::Config, kept: KeptCurrent<K>) {
    let KeptCurrent {
        trim,
        store,
        index,
        subscribers,
        ready,
    } = kept;
    let broadcast = |change: Change<K>| {
        let mut subs = subscribers.lock().unwrap_or_else(PoisonError::into_inner);
        subs.retain(|tx| tx.send(change.clone()).is_ok());
    };
    let stream = watcher(api, config)
        .default_backoff()
        .modify(move |obj: &mut K| {
            strip_metadata(obj.meta_mut());
            if let Some(trim) = trim.get() {
                trim(obj);
            }
        });
    let mut stream = std::pin::pin!(stream);
    let mut relisted = IndexBuild::default();
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::Apply(obj)) => {
                let (key, obj) = store.apply(obj);
                index.apply(&key, &obj);
                broadcast(Change::Applied(obj));
            }
            Ok(watcher::Event::Delete(obj)) => {
                index.delete(&obj);
                store.delete(&obj);
                broadcast(Change::Deleted(Arc::new(obj)));
            }
            Ok(watcher::Event::Init) => {
                store.begin_listing();
                relisted = IndexBuild::default();
            }
            // Listed objects replace their older selves one by one, so a re-list never holds
            // two copies of the kind. Subscribers hear of them only at InitDone, once the index
            // has them too.
            Ok(watcher::Event::InitApply(obj)) => {
                let (key, obj) = store.apply(obj);
                relisted.apply(&key, &obj);
            }
            Ok(watcher::Event::InitDone) => {
                let gone = store.end_listing();
                index.install(std::mem::take(&mut relisted));
                ready.send_replace(true);
                for obj in gone {
                    broadcast(Change::Deleted(obj));
                }
                for key in store.keys() {
                    broadcast(Change::Present(key));
                }
                broadcast(Change::Listed);
            }
            Err(err) => tracing::warn!(kind = %K::kind(&()), error = %err, "watch error, retrying"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    /// Two tasks wait for readiness at once, as a controller and the readiness check do; both
    /// must be woken (kube's reflector store woke only the last).
    #[tokio::test(flavor = "current_thread")]
    async fn every_waiter_learns_that_the_cache_is_ready() {
        let listed = Arc::new(tokio::sync::Notify::new());
        let service = tower::service_fn({
            let listed = listed.clone();
            move |request: http::Request<kube::client::Body>| {
                let listed = listed.clone();
                async move {
                    if request
                        .uri()
                        .query()
                        .unwrap_or_default()
                        .contains("watch=true")
                    {
                        return std::future::pending().await;
                    }
                    listed.notified().await;
                    let list = br#"{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"1"},"items":[]}"#;
                    Ok::<_, std::convert::Infallible>(http::Response::new(
                        kube::client::Body::from(list.to_vec()),
                    ))
                }
            }
        });
        let client = kube::Client::new(service, "ns");
        let cache = SharedCache::<ConfigMap>::spawn(
            Api::namespaced(client, "ns"),
            watcher::Config::default(),
        );
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let cache = cache.clone();
                tokio::spawn(async move { cache.wait_until_ready().await })
            })
            .collect();
        // Let both waiters park before the list is answered.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        listed.notify_one();
        for (i, waiter) in waiters.into_iter().enumerate() {
            tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
                .await
                .unwrap_or_else(|_| panic!("waiter {i} was never woken"))
                .expect("waiter task");
        }
    }
}
