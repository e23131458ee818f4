//! Thread priorities of the solver workers: the CPU share all of them get together, spread
//! over the running ones as nice values.


/// The CPU share of the solver worker threads together (see [`set_worker_share`]), and the
/// threads running now.
static WORKER_SHARE: std::sync::Mutex<WorkerShare> = std::sync::Mutex::new(WorkerShare { total: None, tids: Vec::new(), callers: Vec::new() });

struct WorkerShare {
    /// `None`: every worker at the base priority; else the scheduler weight of all of them
    /// together (a nice-0 thread weighs [`NICE_0_WEIGHT`]).
    total: Option<u32>,
    tids: Vec<libc::pid_t>,
    /// The threads among `tids` that run a race's query themselves (see [`race_until`]), with
    /// the nice value each gets back when its query ends.
    callers: Vec<(libc::pid_t, i32)>,
}

/// The Linux scheduler's weight of a nice-0 thread.
pub const NICE_0_WEIGHT: u32 = 1024;
/// The scheduler's weights of nice values 0 to 19 (`sched_prio_to_weight`): a thread's share of
/// a busy core is its weight over the sum of the runnable threads' weights.
const NICE_WEIGHTS: [u32; 20] = [1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15];

/// The nice value whose weight is nearest `weight` (on a log scale).
fn nice_for_weight(weight: u32) -> i32 {
    let w = (weight.max(1) as f64).ln();
    let distance = |k: usize| ((NICE_WEIGHTS[k] as f64).ln() - w).abs();
    (0..NICE_WEIGHTS.len()).min_by(|&a, &b| distance(a).total_cmp(&distance(b))).unwrap_or(0) as i32
}

impl WorkerShare {
    /// Each worker's nice value now.
    fn nice(&self) -> i32 {
        match self.total {
            None => 0,
            Some(total) => nice_for_weight(total / self.tids.len().max(1) as u32),
        }
    }

    fn apply(&self) {
        let nice = crate::priority::lowered(self.nice());
        for &t in &self.tids {
            // SAFETY: a plain system call; the thread is alive while it is registered (it
            // removes itself under this lock before it ends).
            unsafe { libc::setpriority(libc::PRIO_PROCESS, t as libc::id_t, nice) };
        }
    }
}

/// Registers the calling worker thread for [`set_worker_share`] while it lives.
pub(super) struct WorkerPriority(libc::pid_t);

impl WorkerPriority {
    pub(super) fn enter() -> WorkerPriority {
        let tid = unsafe { libc::gettid() };
        let mut share = WORKER_SHARE.lock().unwrap_or_else(|e| e.into_inner());
        share.tids.push(tid);
        // One more worker: each one's share of the total is smaller.
        if share.total.is_some() {
            share.apply();
        }
        WorkerPriority(tid)
    }

    /// [`Self::enter`] for the thread that calls a race and runs one of its queries: a worker
    /// while the query runs, its own nice value again afterwards (the one it had, or the last
    /// one [`set_thread_nice`] asked for meanwhile).
    pub(super) fn enter_as_caller() -> WorkerPriority {
        let tid = unsafe { libc::gettid() };
        // SAFETY: plain system calls. `getpriority` may return -1 as a value: errno decides.
        let nice = unsafe {
            *libc::__errno_location() = 0;
            let n = libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t);
            if *libc::__errno_location() != 0 { 0 } else { n }
        };
        WORKER_SHARE.lock().unwrap_or_else(|e| e.into_inner()).callers.push((tid, nice));
        Self::enter()
    }
}

impl Drop for WorkerPriority {
    fn drop(&mut self) {
        let mut share = WORKER_SHARE.lock().unwrap_or_else(|e| e.into_inner());
        share.tids.retain(|t| *t != self.0);
        if let Some(k) = share.callers.iter().position(|(t, _)| *t == self.0) {
            let (_, nice) = share.callers.swap_remove(k);
            // SAFETY: a plain system call on the calling thread.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, self.0 as libc::id_t, nice) };
        }
        if share.total.is_some() {
            share.apply();
        }
    }
}

/// Sets thread `tid`'s nice value (absolute, see `priority::lowered`), unless it is running a
/// race's query as a worker ([`race_until`](super::race_until)'s caller): then it gets it when its query ends,
/// and keeps the workers' share meanwhile.
pub fn set_thread_nice(tid: libc::pid_t, nice: i32) {
    let mut share = WORKER_SHARE.lock().unwrap_or_else(|e| e.into_inner());
    match share.callers.iter_mut().find(|(t, _)| *t == tid) {
        Some(c) => c.1 = nice,
        // SAFETY: a plain system call; at worst the thread has just ended.
        None => unsafe {
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice);
        },
    }
}

/// Sets worker thread `tid`, left behind, to the lowest priority for good.
pub(super) fn abandon_worker(tid: libc::pid_t) {
    let mut share = WORKER_SHARE.lock().unwrap_or_else(|e| e.into_inner());
    share.tids.retain(|t| *t != tid);
    // SAFETY: a plain system call on a thread that is alive (see the caller).
    unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19) };
}

/// Gives the solver worker threads, running or started later, `total` scheduler weight
/// together (`None`: each its full base priority). The portfolio weighs the APC's two or
/// three solvers as a fraction of one engine beside the searches: each worker's nice value
/// follows from their number.
pub fn set_worker_share(total: Option<u32>) {
    let mut share = WORKER_SHARE.lock().unwrap_or_else(|e| e.into_inner());
    if share.total != total {
        share.total = total;
        share.apply();
    }
}
