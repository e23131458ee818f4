//! A value another thread is still preparing (the DSE's guide, from the APC's build): the engines
//! that need it wait for it inside the race, so the engines that do not (fuzzing, Horn clauses) start at
//! once instead of after the APC is built (matrir: 0.5–1.9 s of building before any engine ran,
//! where the fuzzer alone needs 0.4 s).

use super::Context;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

pub struct Pending<T> {
    slot: Mutex<Slot<T>>,
    ready: Condvar,
}

enum Slot<T> {
    Waiting,
    Ready(T),
    Taken,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending { slot: Mutex::new(Slot::Waiting), ready: Condvar::new() }
    }
}

impl<T> Pending<T> {
    /// Hands the value over (the first call only; later ones are ignored).
    pub fn set(&self, value: T) {
        let mut g = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*g, Slot::Waiting) {
            *g = Slot::Ready(value);
            self.ready.notify_all();
        }
    }

    /// Waits for the value and takes it; `None` when the race is cancelled first (or another
    /// taker was first).
    pub fn take(&self, cx: &Context) -> Option<T> {
        self.take_unless(|| cx.cancelled())
    }

    /// Like [`Pending::take`], waiting `limit` at most: [`Waited::NotYet`] when the value is
    /// still being prepared then (it is left for nobody).
    pub fn take_within(&self, cx: &Context, limit: Duration) -> Waited<T> {
        let until = std::time::Instant::now() + limit;
        match self.take_unless(|| cx.cancelled() || std::time::Instant::now() >= until) {
            Some(v) => Waited::Got(v),
            None if cx.cancelled() => Waited::Cancelled,
            None => Waited::NotYet,
        }
    }

    fn take_unless(&self, stop: impl Fn() -> bool) -> Option<T> {
        let mut g = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match std::mem::replace(&mut *g, Slot::Taken) {
                Slot::Ready(v) => return Some(v),
                Slot::Taken => return None,
                Slot::Waiting => *g = Slot::Waiting,
            }
            if stop() {
                return None;
            }
            g = self.ready.wait_timeout(g, Duration::from_millis(10)).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

/// What [`Pending::take_within`] got.
pub enum Waited<T> {
    Got(T),
    Cancelled,
    NotYet,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[test]
    fn a_value_set_later_is_taken_once() {
        let p: Arc<Pending<u32>> = Arc::default();
        let q = p.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            q.set(7);
            q.set(8);
        });
        assert_eq!(p.take_unless(|| false), Some(7));
        assert_eq!(p.take_unless(|| false), None);
        t.join().unwrap();
    }

    #[test]
    fn a_stop_ends_the_wait() {
        let p: Pending<u32> = Pending::default();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(30));
                stop.store(true, Ordering::SeqCst);
            });
            assert_eq!(p.take_unless(|| stop.load(Ordering::SeqCst)), None);
        });
    }

    #[test]
    fn a_bounded_wait_tells_a_late_value_from_a_cancel() {
        let cx = crate::engine::context::tests::bare_context();
        let p: Pending<u32> = Pending::default();
        assert!(matches!(p.take_within(&cx, Duration::from_millis(20)), Waited::NotYet));
        p.set(3);
        assert!(matches!(p.take_within(&cx, Duration::from_millis(20)), Waited::Got(3)));
        let q: Pending<u32> = Pending::default();
        cx.cancel.store(true, Ordering::SeqCst);
        assert!(matches!(q.take_within(&cx, Duration::from_secs(5)), Waited::Cancelled));
    }
}
