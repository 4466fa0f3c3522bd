//! An indexed binary min-heap of activity deadlines: each activity has at most one pending
//! event, which a change of rate moves in O(log n) instead of leaving a stale copy behind
//! (a re-solved component of n flows would otherwise push n events per change).

/// A pending event: when, in which order among equal times, and what it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry {
    /// Simulated time, seconds.
    pub t: f64,
    /// Tie-break: earlier pushes first.
    pub seq: u64,
    /// The latency ends (the flow starts to move), rather than the activity.
    pub latency: bool,
}

/// Min-heap of activity ids by [`Entry`].
#[derive(Debug, Default)]
pub struct Deadlines {
    heap: Vec<usize>,
    pos: Vec<u32>,
    entry: Vec<Entry>,
}

const ABSENT: u32 = u32::MAX;

impl Deadlines {
    fn less(&self, a: usize, b: usize) -> bool {
        let (x, y) = (&self.entry[a], &self.entry[b]);
        x.t.total_cmp(&y.t).then(x.seq.cmp(&y.seq)).is_lt()
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.heap.swap(i, j);
        self.pos[self.heap[i]] = i as u32;
        self.pos[self.heap[j]] = j as u32;
    }

    fn up(&mut self, mut i: usize) {
        while i > 0 {
            let p = (i - 1) / 2;
            if self.less(self.heap[i], self.heap[p]) {
                self.swap(i, p);
                i = p;
            } else {
                break;
            }
        }
    }

    fn down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < self.heap.len() && self.less(self.heap[l], self.heap[m]) {
                m = l;
            }
            if r < self.heap.len() && self.less(self.heap[r], self.heap[m]) {
                m = r;
            }
            if m == i {
                break;
            }
            self.swap(i, m);
            i = m;
        }
    }

    /// Sets (or moves) activity `id`'s event.
    pub fn set(&mut self, id: usize, e: Entry) {
        if self.pos.len() <= id {
            self.pos.resize(id + 1, ABSENT);
            self.entry.resize(id + 1, Entry { t: 0.0, seq: 0, latency: false });
        }
        self.entry[id] = e;
        match self.pos[id] {
            ABSENT => {
                self.heap.push(id);
                let i = self.heap.len() - 1;
                self.pos[id] = i as u32;
                self.up(i);
            }
            p => {
                let p = p as usize;
                self.up(p);
                self.down(self.pos[id] as usize);
            }
        }
    }

    /// Drops activity `id`'s event, if it has one.
    pub fn remove(&mut self, id: usize) {
        let Some(&p) = self.pos.get(id) else { return };
        if p == ABSENT {
            return;
        }
        let p = p as usize;
        let last = self.heap.len() - 1;
        self.swap(p, last);
        self.heap.pop();
        self.pos[id] = ABSENT;
        if p < self.heap.len() {
            self.up(p);
            self.down(self.pos[self.heap[p]] as usize);
        }
    }

    /// Whether activity `id` has a pending event.
    pub fn contains(&self, id: usize) -> bool {
        self.pos.get(id).is_some_and(|&p| p != ABSENT)
    }

    /// The time of the earliest event.
    pub fn next_time(&self) -> Option<f64> {
        self.heap.first().map(|&id| self.entry[id].t)
    }

    /// Takes the earliest event.
    pub fn pop(&mut self) -> Option<(usize, Entry)> {
        let &id = self.heap.first()?;
        let e = self.entry[id];
        self.remove(id);
        Some((id, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_by_time_and_a_moved_event_keeps_one_place() {
        let mut d = Deadlines::default();
        let e = |t: f64, seq| Entry { t, seq, latency: false };
        d.set(3, e(3.0, 1));
        d.set(1, e(1.0, 2));
        d.set(2, e(2.0, 3));
        d.set(3, e(0.5, 4));
        d.remove(2);
        d.set(5, e(1.0, 1));
        let order: Vec<usize> = std::iter::from_fn(|| d.pop().map(|x| x.0)).collect();
        assert_eq!(order, [3, 5, 1]);
    }
}
