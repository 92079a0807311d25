//! Giving back the room a burst left behind.
//!
//! Rust's collections never shrink on their own: a work queue that held 72,000 objects for the
//! minute their creation took, or a map of 72,000 expected creates, keeps the room for them for
//! the life of the process, while the cache that grows after the burst needs that memory. At
//! 4,000 Kymas, room kept this way in the work queue and the Kyma expectations was a large
//! share of the operator's heap at its peak.

use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hash};

/// Below this capacity a collection is left as it is: the bookkeeping would cost more than the
/// room it gives back.
const LEAST_WORTH_SHRINKING: usize = 1024;

/// A collection that can give back room it no longer uses.
pub trait Sparse {
    /// The elements held.
    fn held(&self) -> usize;
    /// The elements there is room for without growing. A hash table counts the slots of removed
    /// entries as taken until it rehashes, so it shrinks somewhat after the quarter, not at it.
    fn room(&self) -> usize;
    /// Shrinks the room to at least `min_capacity` (and the length).
    fn shrink_to(&mut self, min_capacity: usize);

    /// Shrinks to twice the length once the length has fallen below a quarter of the room.
    /// Called after removals: the check is two loads, and the shrink (a copy of what is left)
    /// happens only after three quarters were removed, so it costs O(1) per removal.
    fn give_back_room(&mut self) {
        let room = self.room();
        if room > LEAST_WORTH_SHRINKING && self.held() < room / 4 {
            self.shrink_to(self.held() * 2);
        }
    }
}

impl<K: Eq + Hash, V, S: BuildHasher> Sparse for HashMap<K, V, S> {
    fn held(&self) -> usize {
        HashMap::len(self)
    }
    fn room(&self) -> usize {
        self.capacity()
    }
    fn shrink_to(&mut self, min_capacity: usize) {
        HashMap::shrink_to(self, min_capacity);
    }
}

impl<T: Eq + Hash, S: BuildHasher> Sparse for HashSet<T, S> {
    fn held(&self) -> usize {
        HashSet::len(self)
    }
    fn room(&self) -> usize {
        self.capacity()
    }
    fn shrink_to(&mut self, min_capacity: usize) {
        HashSet::shrink_to(self, min_capacity);
    }
}

impl<T> Sparse for VecDeque<T> {
    fn held(&self) -> usize {
        VecDeque::len(self)
    }
    fn room(&self) -> usize {
        self.capacity()
    }
    fn shrink_to(&mut self, min_capacity: usize) {
        VecDeque::shrink_to(self, min_capacity);
    }
}

impl<T: Ord> Sparse for BinaryHeap<T> {
    fn held(&self) -> usize {
        BinaryHeap::len(self)
    }
    fn room(&self) -> usize {
        self.capacity()
    }
    fn shrink_to(&mut self, min_capacity: usize) {
        BinaryHeap::shrink_to(self, min_capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_gives_its_room_back_once_three_quarters_are_gone() {
        let mut map: HashMap<u64, u64> = (0..100_000).map(|i| (i, i)).collect();
        let burst = map.room();
        for i in 0..99_000 {
            map.remove(&i);
            map.give_back_room();
        }
        assert!(map.room() < burst / 8, "{} of {burst} left", map.room());
        assert_eq!(map.len(), 1_000, "nothing lost");
        assert!((99_000..100_000).all(|i| map.get(&i) == Some(&i)));
    }

    #[test]
    fn small_collections_are_left_alone() {
        let mut queue: VecDeque<u32> = (0..1000).collect();
        let room = queue.room();
        queue.clear();
        queue.give_back_room();
        assert_eq!(queue.room(), room);
    }
}
