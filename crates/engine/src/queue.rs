//! The work queue behind every controller.
//!
//! Why our own and not kube-runtime's scheduler: its queue is internal, so neither the number of
//! pending objects (`workqueue_depth`) nor adds and retries can be observed, and its per-object
//! retry time is whatever the error policy returns with no memory of earlier failures. This queue
//! follows client-go's workqueue semantics, which controller-runtime operators are tuned for:
//!
//! - an object is at most once in the queue (adds are deduplicated);
//! - an object being processed is never handed out again; adds during processing mark it dirty
//!   and it is re-queued when processing finishes;
//! - delayed adds keep the earliest time per object;
//! - the failure count per object drives exponential backoff and is reset on success.
//!
//! One addition: the objects a controller finds at its start (its cache's initial list) are
//! not queued at once but swept in ([`WorkQueue::sweep_in`]): admitted in list order whenever
//! fewer than the reconcile bucket's burst are queued. A process that restarts with 76,000
//! objects present looks at every one of them anyway, at the bucket's rate; queuing them all at
//! once only made the queue 72,000 deep for the minute that takes. Kept apart, the queue stays
//! within the bucket, and `{prefix}_workqueue_unswept` says how much of the initial list is
//! still to come. An object of the initial list that an event names before the sweep reaches
//! it is queued at once, ahead of the sweep.
//!
//! kube-runtime's watcher still feeds it, through the engine's cache; only the scheduling is ours.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::metrics::Metrics;
use super::requeue::{Backoff, REJECTED_BACKOFF_BASE};
use super::sparse::Sparse;

/// Stale timers (see [`Timer`]) tolerated beyond half the live ones before the heap is rebuilt
/// without them.
const STALE_TIMERS_SLACK: usize = 1024;

/// What to do with an object after a reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Succeeded (or is waiting, or is invalid and waits for a change): reset the failure count
    /// and look again after the delay.
    After(Duration),
    /// Failed (transiently, or lost a race): count the failure, back off exponentially.
    Backoff,
    /// Another system refused the request: count the failure, back off slowly
    /// ([`REJECTED_BACKOFF_BASE`]) up to `cap`.
    Rejected {
        /// The longest delay: the sync period, or the backoff's maximum if that is shorter.
        cap: Duration,
    },
    /// The object is gone: drop everything we know about it.
    Forget,
    /// The pass did not begin (no seat to wait in for its remote system's pass slot): the
    /// failure count stays as it is, and a timer looks again after the delay should nothing
    /// queue the object sooner.
    Deferred(Duration),
}

pub(crate) struct QueueMetrics {
    pub depth: Gauge,
    /// Objects of the initial list not yet admitted into the queue.
    pub unswept: Gauge,
    pub adds: Counter,
    pub retries: Counter,
    /// From entering the queue to being handed out.
    pub queue_duration: Histogram,
    /// From being handed out to finished.
    pub work_duration: Histogram,
}

impl QueueMetrics {
    /// The metrics of the queue named `name`.
    pub fn of(metrics: &Metrics, name: &str) -> Self {
        QueueMetrics {
            depth: metrics.workqueue_depth(name),
            unswept: metrics.workqueue_unswept(name),
            adds: metrics.workqueue_adds_total(name),
            retries: metrics.workqueue_retries_total(name),
            queue_duration: metrics.workqueue_queue_duration(name),
            work_duration: metrics.workqueue_work_duration(name),
        }
    }
}

pub(crate) struct WorkQueue<T> {
    state: Mutex<State<T>>,
    /// Tick 0.
    epoch: Instant,
    ready: Notify,
    timer: Notify,
    backoff: Backoff,
    metrics: QueueMetrics,
}

struct State<T> {
    queue: VecDeque<T>,
    /// Items in `queue`, with the time they entered it.
    queued: HashMap<T, Instant>,
    /// Items handed out, with the time they were.
    processing: HashMap<T, Instant>,
    dirty: HashSet<T>,
    /// The tick each item with a timer is due at (see [`Tick`]).
    due: HashMap<T, Tick>,
    timers: BinaryHeap<Timer<T>>,
    failures: HashMap<T, u32>,
    /// The initial list, in list order, as far as it is not admitted yet (entries no longer in
    /// `unswept` are skipped when reached).
    sweep: VecDeque<T>,
    /// The items of `sweep` still to be admitted.
    unswept: HashSet<T>,
    /// Until the dispatcher starts, `None`: the initial list is swept in, nothing is admitted.
    /// Then the queue length up to which the sweep is admitted.
    admit: Option<usize>,
}

/// A heap entry; stale entries (whose time no longer matches `due`) are skipped when popped, which
/// is cheaper than removing from the middle of a heap. A stale entry of a long delay (a resync an
/// hour away, replaced by every pass before it) would wait that long to be popped, though: once
/// the stale are half as many as the live, the heap is rebuilt without them
/// ([`State::drop_stale_timers`]).
struct Timer<T> {
    at: Tick,
    item: T,
}

/// A timer's time: milliseconds since the queue was made, rounded up. Every object has a timer
/// (its next resync at the least) in `due` and in the heap, so its size counts once per object:
/// an `Instant` and a tie-breaking sequence number in each are three times this, and a requeue
/// needs no finer time than a millisecond.
type Tick = u64;

impl<T> PartialEq for Timer<T> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}
impl<T> Eq for Timer<T> {}
impl<T> PartialOrd for Timer<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Timer<T> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.cmp(&self.at)
    }
}

impl<T: Clone + Eq + Hash> WorkQueue<T> {
    pub fn new(backoff: Backoff, metrics: QueueMetrics) -> Self {
        WorkQueue {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                queued: HashMap::new(),
                processing: HashMap::new(),
                dirty: HashSet::new(),
                due: HashMap::new(),
                timers: BinaryHeap::new(),
                failures: HashMap::new(),
                sweep: VecDeque::new(),
                unswept: HashSet::new(),
                admit: None,
            }),
            epoch: Instant::now(),
            ready: Notify::new(),
            timer: Notify::new(),
            backoff,
            metrics,
        }
    }

    /// The tick of `at`, rounded up: a timer never fires before its time.
    fn tick_at(&self, at: Instant) -> Tick {
        let since = at.saturating_duration_since(self.epoch);
        let millis =
            since.as_millis() + u128::from(!since.subsec_nanos().is_multiple_of(1_000_000));
        Tick::try_from(millis).unwrap_or(Tick::MAX)
    }

    /// The ticks that have passed completely.
    fn ticks_passed(&self) -> Tick {
        Tick::try_from(self.epoch.elapsed().as_millis()).unwrap_or(Tick::MAX)
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `item` now.
    pub fn add(&self, item: T) {
        let mut state = self.lock();
        if state.unswept.contains(&item) {
            if state.admit.is_none() {
                // Nothing has been passed yet: the sweep looks at it anyway.
                return;
            }
            // Named by an event: ahead of the sweep.
            state.unswept.remove(&item);
            self.metrics.unswept.set(gauge_value(state.unswept.len()));
        }
        self.enqueue(&mut state, item, true);
    }

    /// Adds `item`, found at the controller's start, to the sweep (see the module docs); once
    /// the dispatcher has started, the same as [`add`](Self::add).
    pub fn sweep_in(&self, item: T) {
        let mut state = self.lock();
        if state.admit.is_some() {
            self.enqueue(&mut state, item, true);
            return;
        }
        if state.queued.contains_key(&item) || !state.unswept.insert(item.clone()) {
            return;
        }
        state.sweep.push_back(item);
        self.metrics.unswept.set(gauge_value(state.unswept.len()));
    }

    /// The dispatcher starts: from now on the sweep is admitted while fewer than `admit` items
    /// are queued (at least one).
    pub fn start(&self, admit: usize) {
        let mut state = self.lock();
        state.admit = Some(admit.max(1));
        self.admit_swept(&mut state);
    }

    fn admit_swept(&self, state: &mut State<T>) {
        let Some(admit) = state.admit else {
            return;
        };
        if state.sweep.is_empty() {
            return;
        }
        while state.queue.len() < admit {
            let Some(item) = state.sweep.pop_front() else {
                break;
            };
            if state.unswept.remove(&item) {
                self.enqueue(state, item, true);
            }
        }
        if state.sweep.is_empty() {
            // Done: give the initial list's memory back.
            state.sweep = VecDeque::new();
            state.unswept = HashSet::new();
        }
        self.metrics.unswept.set(gauge_value(state.unswept.len()));
    }

    fn enqueue(&self, state: &mut State<T>, item: T, count: bool) {
        if state.queued.contains_key(&item) {
            return;
        }
        if state.processing.contains_key(&item) {
            if state.dirty.insert(item) && count {
                self.metrics.adds.inc();
            }
            return;
        }
        if count {
            self.metrics.adds.inc();
        }
        state.queued.insert(item.clone(), Instant::now());
        state.queue.push_back(item);
        self.metrics.depth.set(gauge_value(state.queue.len()));
        self.ready.notify_one();
    }

    /// Queues `item` after `delay`, unless it is already due earlier.
    #[cfg(test)]
    pub fn add_after(&self, item: T, delay: Duration) {
        let mut state = self.lock();
        self.schedule(&mut state, item, delay);
    }

    fn schedule(&self, state: &mut State<T>, item: T, delay: Duration) {
        if delay.is_zero() {
            self.enqueue(state, item, true);
            return;
        }
        if state.queued.contains_key(&item) {
            return;
        }
        let at = self.tick_at(Instant::now() + delay);
        if state.due.get(&item).is_some_and(|due| *due <= at) {
            return;
        }
        state.due.insert(item.clone(), at);
        state.timers.push(Timer { at, item });
        state.drop_stale_timers();
        self.timer.notify_one();
    }

    /// How long the item at the head of the queue has waited to be handed out; zero when none
    /// waits. Growing while the queue is not empty means nothing drains it.
    pub fn oldest_age(&self) -> Duration {
        let state = self.lock();
        state
            .queue
            .front()
            .and_then(|item| state.queued.get(item))
            .map_or(Duration::ZERO, Instant::elapsed)
    }

    /// Whether nothing is ready to be handed out (the sweep counts once the dispatcher started).
    pub fn is_empty(&self) -> bool {
        let state = self.lock();
        state.queue.is_empty() && (state.admit.is_none() || state.unswept.is_empty())
    }

    /// Hands out the next ready item and marks it as processing.
    pub fn pop(&self) -> Option<T> {
        let mut state = self.lock();
        // Topped up before each hand-out, so the queue never holds more than `admit` from the
        // sweep.
        self.admit_swept(&mut state);
        let item = state.queue.pop_front()?;
        if let Some(since) = state.queued.remove(&item) {
            self.metrics
                .queue_duration
                .observe(since.elapsed().as_secs_f64());
        }
        // The reconcile's result decides the next time; an older timer would only add a run.
        state.due.remove(&item);
        state.processing.insert(item.clone(), Instant::now());
        self.metrics.depth.set(gauge_value(state.queue.len()));
        state.give_back_room();
        Some(item)
    }

    /// Ends processing of `item` and schedules its next run; returns the delay chosen.
    pub fn finish(&self, item: T, next: Next) -> Option<Duration> {
        let mut state = self.lock();
        if let Some(since) = state.processing.remove(&item) {
            self.metrics
                .work_duration
                .observe(since.elapsed().as_secs_f64());
        }
        let delay = match next {
            Next::After(delay) => {
                state.failures.remove(&item);
                Some(delay)
            }
            Next::Backoff => {
                let failures = state.failures.entry(item.clone()).or_insert(0);
                *failures = failures.saturating_add(1);
                let delay = self.backoff.delay(*failures);
                self.metrics.retries.inc();
                Some(delay)
            }
            Next::Rejected { cap } => {
                let failures = state.failures.entry(item.clone()).or_insert(0);
                *failures = failures.saturating_add(1);
                let delay = Backoff::new(REJECTED_BACKOFF_BASE.min(cap), cap).delay(*failures);
                self.metrics.retries.inc();
                Some(delay)
            }
            Next::Forget => {
                state.failures.remove(&item);
                state.due.remove(&item);
                None
            }
            Next::Deferred(delay) => Some(delay),
        };
        if state.dirty.remove(&item) {
            // Something changed while we were reconciling: look again now, as client-go does.
            self.enqueue(&mut state, item.clone(), false);
        }
        if let Some(delay) = delay {
            self.schedule(&mut state, item, delay);
        }
        state.give_back_room();
        delay
    }

    /// Drops the failure count and any timer of a deleted object.
    pub fn forget<Q>(&self, item: &Q)
    where
        T: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut state = self.lock();
        state.failures.remove(item);
        state.due.remove(item);
        if state.unswept.remove(item) {
            self.metrics.unswept.set(gauge_value(state.unswept.len()));
        }
        state.give_back_room();
    }

    /// Timer heap entries, and the room the queue's maps keep (`queued`, `due`).
    #[cfg(test)]
    fn held(&self) -> (usize, usize, usize) {
        let state = self.lock();
        (
            state.timers.len(),
            state.queued.capacity(),
            state.due.capacity(),
        )
    }

    /// Consecutive failures recorded for `item`.
    #[cfg(test)]
    pub fn failures(&self, item: &T) -> u32 {
        self.lock().failures.get(item).copied().unwrap_or(0)
    }

    /// Waits until an item is ready. Only one task (the dispatcher) may wait here.
    pub async fn wait_ready(&self) {
        loop {
            let notified = self.ready.notified();
            if !self.is_empty() {
                return;
            }
            notified.await;
        }
    }

    /// Moves due items into the queue; returns when the next timer fires.
    fn promote_due(&self) -> Option<Instant> {
        let now = self.ticks_passed();
        let mut state = self.lock();
        while let Some(top) = state.timers.peek() {
            if top.at > now {
                return Some(self.epoch + Duration::from_millis(top.at));
            }
            let Some(Timer { at, item, .. }) = state.timers.pop() else {
                break;
            };
            if state.due.get(&item) == Some(&at) {
                state.due.remove(&item);
                self.enqueue(&mut state, item, true);
            }
        }
        state.give_back_room();
        None
    }

    /// Runs the timers forever; spawn it next to the dispatcher.
    pub async fn run_timers(&self) {
        loop {
            let notified = self.timer.notified();
            match self.promote_due() {
                Some(at) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = notified => {}
                    }
                }
                None => notified.await,
            }
        }
    }
}

impl<T: Eq + Hash> State<T> {
    /// Rebuilds the timer heap without its stale entries once they exceed half the live ones
    /// (plus a slack): O(n) after at least n/3 pushes, so O(1) per push, and the heap stays
    /// within 1.5 times the objects that have a timer.
    fn drop_stale_timers(&mut self) {
        if self.timers.len() <= self.due.len() + self.due.len() / 2 + STALE_TIMERS_SLACK {
            return;
        }
        let due = &self.due;
        self.timers
            .retain(|timer| due.get(&timer.item) == Some(&timer.at));
        self.timers.give_back_room();
    }

    /// Gives back the room of collections a burst filled and that have since emptied (see
    /// [`Sparse`]): after a creation wave, 72,000 objects' worth of queue, waiting times and
    /// timers.
    fn give_back_room(&mut self) {
        self.queue.give_back_room();
        self.queued.give_back_room();
        self.processing.give_back_room();
        self.dirty.give_back_room();
        self.due.give_back_room();
        self.timers.give_back_room();
        self.failures.give_back_room();
    }
}

fn gauge_value(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn queue() -> (Arc<WorkQueue<&'static str>>, QueueMetrics) {
        let metrics = QueueMetrics::of(&Metrics::unregistered(), "test");
        let observed = QueueMetrics {
            depth: metrics.depth.clone(),
            unswept: metrics.unswept.clone(),
            adds: metrics.adds.clone(),
            retries: metrics.retries.clone(),
            queue_duration: metrics.queue_duration.clone(),
            work_duration: metrics.work_duration.clone(),
        };
        let q = WorkQueue::new(
            Backoff::new(Duration::from_secs(1), Duration::from_secs(1000)),
            metrics,
        );
        (Arc::new(q), observed)
    }

    #[test]
    fn the_initial_list_is_admitted_within_the_burst_in_list_order() {
        let (q, m) = queue();
        let listed = ["a", "b", "c", "d", "e"];
        for item in listed {
            q.sweep_in(item);
        }
        // A second feed naming a listed object before the start changes nothing.
        q.add("c");
        assert_eq!(
            (m.depth.get(), m.unswept.get()),
            (0, 5),
            "nothing admitted before the start"
        );
        assert!(q.is_empty(), "nothing to hand out before the start");
        q.start(2);
        assert_eq!((m.depth.get(), m.unswept.get()), (2, 3));
        let mut handed = Vec::new();
        while let Some(item) = q.pop() {
            assert!(m.depth.get() <= 2, "queue beyond the burst");
            handed.push(item);
        }
        assert_eq!(handed, listed, "each once, in list order");
        assert_eq!(m.unswept.get(), 0);
        assert_eq!(m.adds.get(), 5);
    }

    #[test]
    fn an_event_puts_a_listed_object_ahead_of_the_sweep_once() {
        let (q, _) = queue();
        for item in ["a", "b", "c"] {
            q.sweep_in(item);
        }
        q.start(1);
        q.add("c");
        let mut handed = Vec::new();
        while let Some(item) = q.pop() {
            handed.push(item);
        }
        assert_eq!(
            handed,
            ["a", "c", "b"],
            "c named by an event, and not again by the sweep"
        );
    }

    #[test]
    fn a_listed_object_deleted_before_the_sweep_reaches_it_is_not_handed_out() {
        let (q, m) = queue();
        for item in ["a", "b"] {
            q.sweep_in(item);
        }
        q.forget("b");
        assert_eq!(m.unswept.get(), 1);
        q.start(10);
        assert_eq!(q.pop(), Some("a"));
        assert_eq!(q.pop(), None);
        assert!(q.is_empty());
    }

    #[test]
    fn after_the_start_a_relisted_object_is_queued_at_once() {
        let (q, m) = queue();
        q.start(1);
        q.sweep_in("a");
        q.sweep_in("b");
        assert_eq!((m.depth.get(), m.unswept.get()), (2, 0));
    }

    #[test]
    fn a_deferred_pass_keeps_the_failure_count_and_sets_a_net_timer() {
        let (q, m) = queue();
        q.add("a");
        let item = q.pop().expect("queued");
        q.finish(item, Next::Backoff);
        q.add("a");
        let item = q.pop().expect("queued");
        let net = Duration::from_secs(600);
        assert_eq!(q.finish(item, Next::Deferred(net)), Some(net));
        assert_eq!(
            q.failures(&"a"),
            1,
            "a pass that did not begin neither failed nor succeeded"
        );
        assert_eq!(m.retries.get(), 1, "not counted as a retry");
        // Queued again when its line moves, before the net's timer.
        q.add("a");
        assert_eq!(q.pop(), Some("a"));
    }

    #[test]
    fn dedupes_and_reports_depth() {
        let (q, m) = queue();
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(m.depth.get(), 2);
        assert_eq!(m.adds.get(), 2);
        assert_eq!(q.pop(), Some("a"));
        assert_eq!(m.depth.get(), 1);
    }

    #[test]
    fn never_hands_out_an_item_twice_at_once() {
        let (q, m) = queue();
        q.add("a");
        assert_eq!(q.pop(), Some("a"));
        q.add("a");
        q.add("a");
        assert_eq!(q.pop(), None, "a is processing: marked dirty, not queued");
        assert_eq!(m.adds.get(), 2);
        q.finish("a", Next::After(Duration::from_secs(600)));
        assert_eq!(q.pop(), Some("a"), "dirty item comes back after finish");
    }

    #[tokio::test(start_paused = true)]
    async fn the_oldest_item_age_grows_until_the_head_is_handed_out() {
        let (q, _) = queue();
        assert_eq!(q.oldest_age(), Duration::ZERO, "nothing waits");
        q.add("a");
        tokio::time::advance(Duration::from_secs(5)).await;
        q.add("b");
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(q.oldest_age(), Duration::from_secs(7));
        assert_eq!(q.pop(), Some("a"));
        assert_eq!(q.oldest_age(), Duration::from_secs(2), "b is the head now");
        assert_eq!(q.pop(), Some("b"));
        assert_eq!(q.oldest_age(), Duration::ZERO);
    }

    /// Exported at scrape time, per queue, and silent once the queue is gone.
    #[tokio::test(start_paused = true)]
    async fn the_oldest_item_age_is_read_when_scraped() {
        let mut registry = prometheus_client::registry::Registry::default();
        let metrics = Metrics::new(&mut registry, "demo");
        let q = Arc::new(WorkQueue::new(
            Backoff::new(Duration::from_secs(1), Duration::from_secs(1000)),
            QueueMetrics::of(&metrics, "svm"),
        ));
        let weak = Arc::downgrade(&q);
        metrics.watch_queue_age("svm", move || weak.upgrade().map(|q| q.oldest_age()));
        let scrape = || {
            let mut text = String::new();
            prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
            text
        };
        q.add("a");
        tokio::time::advance(Duration::from_secs(3)).await;
        assert!(
            scrape().contains(r#"demo_workqueue_oldest_item_age_seconds{name="svm"} 3.0"#),
            "{}",
            scrape()
        );
        drop(q);
        assert!(!scrape().contains(r#"oldest_item_age_seconds{name="svm"}"#));
    }

    #[tokio::test(start_paused = true)]
    async fn failures_back_off_exponentially_and_reset_on_success() {
        let (q, m) = queue();
        let timers = tokio::spawn({
            let q = q.clone();
            async move { q.run_timers().await }
        });
        let start = Instant::now();
        q.add("a");
        let mut runs = Vec::new();
        for attempt in 0..6 {
            q.wait_ready().await;
            let item = q.pop().expect("ready");
            runs.push((Instant::now() - start).as_secs());
            let next = if attempt < 5 {
                Next::Backoff
            } else {
                Next::After(Duration::from_secs(600))
            };
            q.finish(item, next);
        }
        // Started at 0, then after 1, 2, 4, 8, 16 seconds.
        assert_eq!(runs, [0, 1, 3, 7, 15, 31]);
        assert_eq!(m.retries.get(), 5);
        assert_eq!(q.failures(&"a"), 0, "success resets the count");

        // After the reset the next failure waits the base delay again.
        q.add("a");
        q.wait_ready().await;
        let item = q.pop().expect("ready");
        assert_eq!(q.finish(item, Next::Backoff), Some(Duration::from_secs(1)));
        timers.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn rejections_back_off_slowly_up_to_the_cap_and_share_the_failure_count() {
        let (q, m) = queue();
        let cap = Duration::from_secs(600);
        let delays: Vec<u64> = (0..7)
            .map(|_| {
                q.add("a");
                let item = q.pop().expect("ready");
                q.finish(item, Next::Rejected { cap })
                    .expect("scheduled")
                    .as_secs()
            })
            .collect();
        // A one-off clears after half a minute; a lasting refusal costs five requests in the
        // first sync period, then one per period.
        assert_eq!(delays, [30, 60, 120, 240, 480, 600, 600]);
        assert_eq!(m.retries.get(), 7);
        q.add("a");
        let item = q.pop().expect("ready");
        q.finish(item, Next::After(cap));
        assert_eq!(q.failures(&"a"), 0, "success resets the count");

        // A cap below the base (a short sync period or backoff maximum) wins.
        q.add("b");
        let item = q.pop().expect("ready");
        assert_eq!(
            q.finish(
                item,
                Next::Rejected {
                    cap: Duration::from_secs(5)
                }
            ),
            Some(Duration::from_secs(5))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_adds_keep_the_earliest_time() {
        let (q, _) = queue();
        let timers = tokio::spawn({
            let q = q.clone();
            async move { q.run_timers().await }
        });
        q.add_after("a", Duration::from_secs(10));
        q.add_after("a", Duration::from_secs(3));
        q.add_after("a", Duration::from_secs(20));
        let start = Instant::now();
        q.wait_ready().await;
        assert_eq!((Instant::now() - start).as_secs(), 3);
        assert_eq!(q.pop(), Some("a"));
        q.finish("a", Next::Forget);
        // The stale 10 s and 20 s timers must not bring it back.
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(q.is_empty());
        timers.abort();
    }

    /// A Kyma's hour-long wait, replaced by each of its passes long before it fires, left one
    /// heap entry per pass for that hour (72,000 at 4,000 Kymas).
    #[tokio::test(start_paused = true)]
    async fn replaced_timers_do_not_pile_up() {
        let (q, _) = queue();
        for _ in 0..20_000 {
            q.add("a");
            let item = q.pop().expect("ready");
            q.finish(item, Next::After(Duration::from_secs(3600)));
            tokio::time::advance(Duration::from_millis(1)).await;
        }
        let (timers, _, _) = q.held();
        assert!(
            timers <= 1 + STALE_TIMERS_SLACK,
            "{timers} timers for one object"
        );
        // The live timer survived the rebuilds.
        tokio::time::advance(Duration::from_secs(3600)).await;
        q.promote_due();
        assert_eq!(q.pop(), Some("a"));
        assert_eq!(q.pop(), None, "once");
    }

    /// After a creation wave has drained, the room it filled is given back.
    #[tokio::test(start_paused = true)]
    async fn a_drained_burst_gives_its_room_back() {
        let metrics = QueueMetrics::of(&Metrics::unregistered(), "test");
        let q: WorkQueue<u32> = WorkQueue::new(
            Backoff::new(Duration::from_secs(1), Duration::from_secs(1000)),
            metrics,
        );
        for i in 0..50_000 {
            q.add(i);
        }
        let (_, burst, _) = q.held();
        while let Some(i) = q.pop() {
            q.finish(i, Next::After(Duration::from_secs(u64::from(i) + 1)));
        }
        let (_, queued, due) = q.held();
        assert!(queued < burst / 8, "queued keeps {queued} of {burst}");
        assert!(due >= 50_000, "every object still has its timer");
        tokio::time::advance(Duration::from_secs(50_001)).await;
        q.promote_due();
        let mut handed = 0;
        while let Some(i) = q.pop() {
            q.finish(i, Next::Forget);
            handed += 1;
        }
        assert_eq!(handed, 50_000, "each timer fired once");
        let (timers, queued, due) = q.held();
        assert_eq!(timers, 0);
        assert!(
            queued < burst / 8 && due < burst / 8,
            "{queued} and {due} of {burst} kept"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn forget_cancels_pending_timer() {
        let (q, _) = queue();
        let timers = tokio::spawn({
            let q = q.clone();
            async move { q.run_timers().await }
        });
        q.add_after("a", Duration::from_secs(5));
        q.forget(&"a");
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(q.is_empty());
        timers.abort();
    }
}
