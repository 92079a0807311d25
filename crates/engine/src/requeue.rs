//! Requeue policy primitives: per-object exponential backoff, a token bucket, jitter.
//!
//! Both run on `tokio::time`, not `std::time`, so tests drive them with a paused clock instead of
//! sleeping. That is also why the token bucket is ours and not `governor`'s: governor keeps its
//! own clock, which `tokio::time::pause` cannot stop.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// Per-object exponential failure backoff: `base · 2^(failures-1)`, capped at `max`.
///
/// Like client-go's `ItemExponentialFailureRateLimiter`; the failure count lives in the work
/// queue, keyed by object, and is reset when a reconcile succeeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    base: Duration,
    max: Duration,
}

impl Backoff {
    /// A backoff from `base` doubling up to `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Backoff {
            base,
            max: max.max(base),
        }
    }

    /// The delay after the `failures`-th consecutive failure (1-based; 0 means no delay).
    pub fn delay(&self, failures: u32) -> Duration {
        if failures == 0 {
            return Duration::ZERO;
        }
        // 2^31 · 1 ns already exceeds any sensible max; clamping the exponent avoids overflow.
        let factor = 1u32.checked_shl(failures - 1).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.max)
    }
}

/// The first delay after a request another system refused ([`StepError::rejected`]); it doubles
/// per consecutive failure up to the sync period (and never beyond `backoff_max`). Slow, because
/// such a refusal usually repeats and each try costs the other system a request; not the sync
/// period, because a refusal that clears must not hold the object for ten minutes.
///
/// [`StepError::rejected`]: crate::StepError::rejected
pub const REJECTED_BACKOFF_BASE: Duration = Duration::from_secs(30);

/// A token bucket handing out reservations, like Go's `rate.Limiter.Reserve`.
///
/// `rate` tokens per second refill a bucket of `burst` tokens. A reservation always succeeds and
/// returns the instant at which its token is available; callers sleep until then. Reserving
/// rather than polling keeps waiters in FIFO order and needs no wake-up machinery.
#[derive(Debug)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    state: Mutex<BucketState>,
}

#[derive(Debug)]
struct BucketState {
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A bucket starting full. Returns `None` when `rate` is not positive, which means
    /// "no limit". A `burst` below 1 is raised to 1, or no token could ever be handed out.
    pub fn new(rate: f64, burst: u32) -> Option<Self> {
        if rate.is_nan() || rate <= 0.0 {
            return None;
        }
        let burst = f64::from(burst.max(1));
        Some(TokenBucket {
            rate,
            burst,
            state: Mutex::new(BucketState {
                tokens: burst,
                last: Instant::now(),
            }),
        })
    }

    /// Takes one token and returns when it is available (now, or later if the bucket is empty).
    pub fn reserve(&self) -> Instant {
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let elapsed = now.saturating_duration_since(state.last).as_secs_f64();
        state.tokens = (state.tokens + elapsed * self.rate).min(self.burst);
        state.last = now;
        state.tokens -= 1.0;
        if state.tokens >= 0.0 {
            now
        } else {
            // A negative balance is the queue of earlier reservations still waiting.
            now + Duration::from_secs_f64(-state.tokens / self.rate)
        }
    }

    /// Waits for one token and returns how long that took: the tests' view of [`reserve`](Self::reserve).
    #[cfg(test)]
    pub async fn acquire(&self) -> Duration {
        let start = Instant::now();
        let at = self.reserve();
        if at > start {
            tokio::time::sleep_until(at).await;
        }
        at.saturating_duration_since(start)
    }
}

/// `d` stretched by a random factor in `[1, 1 + fraction)`, so that objects created together do
/// not all re-verify in the same second after every sync period.
pub fn jittered(d: Duration, fraction: f64) -> Duration {
    if fraction <= 0.0 || d.is_zero() {
        return d;
    }
    let factor = 1.0 + rand::random::<f64>() * fraction;
    d.mul_f64(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let b = Backoff::new(Duration::from_secs(1), Duration::from_secs(1000));
        let delays: Vec<u64> = (0..13).map(|n| b.delay(n).as_secs()).collect();
        assert_eq!(
            delays,
            [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 1000]
        );
        assert_eq!(b.delay(u32::MAX), Duration::from_secs(1000));
    }

    #[test]
    fn backoff_max_below_base_is_base() {
        let b = Backoff::new(Duration::from_secs(5), Duration::from_secs(1));
        assert_eq!(b.delay(3), Duration::from_secs(5));
    }

    #[test]
    fn zero_rate_disables() {
        assert!(TokenBucket::new(0.0, 10).is_none());
        assert!(TokenBucket::new(-1.0, 10).is_none());
        assert!(TokenBucket::new(f64::NAN, 10).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_grants_burst_then_rate() {
        let bucket = TokenBucket::new(10.0, 5).expect("positive rate");
        let start = Instant::now();
        for _ in 0..5 {
            assert_eq!(bucket.reserve(), start, "burst is immediate");
        }
        // Then one token per 100 ms, queued behind each other.
        for i in 1..=10u32 {
            let at = bucket.reserve();
            let expected = Duration::from_millis(100) * i;
            let got = at - start;
            assert!(
                got.abs_diff(expected) < Duration::from_micros(10),
                "token {i}: {got:?} vs {expected:?}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_refills_while_idle_but_not_beyond_burst() {
        let bucket = TokenBucket::new(2.0, 3).expect("positive rate");
        for _ in 0..3 {
            bucket.reserve();
        }
        tokio::time::advance(Duration::from_secs(60)).await;
        let now = Instant::now();
        for _ in 0..3 {
            assert_eq!(bucket.reserve(), now);
        }
        assert!(bucket.reserve() > now, "only `burst` tokens accumulate");
    }

    #[tokio::test(start_paused = true)]
    async fn acquire_sleeps_until_token() {
        let bucket = TokenBucket::new(4.0, 1).expect("positive rate");
        let start = Instant::now();
        assert_eq!(bucket.acquire().await, Duration::ZERO);
        let waited = bucket.acquire().await;
        assert_eq!(waited, Duration::from_millis(250));
        assert_eq!(Instant::now() - start, Duration::from_millis(250));
        // Sustained: n acquisitions at rate r take about n / r.
        for _ in 0..40 {
            bucket.acquire().await;
        }
        let elapsed = Instant::now() - start;
        assert!(
            elapsed.abs_diff(Duration::from_millis(10_250)) < Duration::from_millis(1),
            "{elapsed:?}"
        );
    }

    #[test]
    fn jitter_stays_in_range() {
        let d = Duration::from_secs(600);
        for _ in 0..1000 {
            let j = jittered(d, 0.1);
            assert!(j >= d && j < Duration::from_secs(660), "{j:?}");
        }
        assert_eq!(jittered(d, 0.0), d);
    }
}
