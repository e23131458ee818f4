//! The worker protocol: a solver thread's Z3 context as another thread sees it (to interrupt
//! it), the guard that stops and joins workers, work on a worker of its own ([`in_worker`]), and
//! the exit for a process that left a thread inside Z3 ([`exit_now`]).

use super::logic::note_context;
use super::share::abandon_worker;
use std::time::{Duration, Instant};

/// The Z3 context of one racing worker, as seen by the thread that interrupts it.
///
/// Life cycle, all under the slot's mutex: `Pending` → `Running(ctx)` (the worker's thread-local
/// context exists and will live until the worker clears the slot) → `Done`. Once the race is
/// decided the slot is `stop`ped: a `Pending` worker then never starts its query, and a
/// `Running` one is interrupted (again and again, until it reports `Done`).
pub(super) enum WorkerState {
    Pending,
    Running(z3_sys::Z3_context),
    Done,
}

pub(super) struct Slot {
    pub(super) state: WorkerState,
    pub(super) stop: bool,
    /// The worker's thread id once it runs (0 before): a worker left behind is lowered.
    pub(super) tid: libc::pid_t,
}

// SAFETY: the raw context pointer is only used for `Z3_interrupt` (documented thread-safe),
// and only under the slot's mutex while the state is `Running`: the worker sets `Running` after
// its thread-local context exists and switches to `Done` (under the same mutex) before that
// context can be deleted (it is deleted by the thread-local destructor, after the worker's
// closure returned). So the pointer is never used after `Z3_del_context`.
unsafe impl Send for Slot {}

pub(super) type SharedSlot = std::sync::Arc<std::sync::Mutex<Slot>>;

/// A worker's first step once its thread-local context exists: `Running` (it may be
/// interrupted from now on), or `Done` at once when the race was already stopped (then it
/// must not start its query: `false`).
pub(super) fn announce_running(slot: &SharedSlot, ctx: &z3::Context) -> bool {
    let mut g = slot.lock().unwrap_or_else(|e| e.into_inner());
    if g.stop {
        g.state = WorkerState::Done;
        return false;
    }
    g.state = WorkerState::Running(ctx.get_z3_context());
    g.tid = unsafe { libc::gettid() };
    true
}

/// The Z3 context of a thread that another thread may interrupt, outside any race: the APC's
/// build, which the end of the race stops (its summary checks have their own time limits and
/// do not look at its stop flag; a build left in one kept a core busy beside the witness
/// reduction). The same slot protocol as a racing worker's.
#[derive(Clone)]
pub struct Interrupter(SharedSlot);

impl Default for Interrupter {
    fn default() -> Self {
        Interrupter(std::sync::Arc::new(std::sync::Mutex::new(Slot { state: WorkerState::Pending, stop: false, tid: 0 })))
    }
}

thread_local! {
    /// The slot of the [`Interrupter`] the thread has entered, announced at its first check.
    static ENTERED: std::cell::RefCell<Option<SharedSlot>> = const { std::cell::RefCell::new(None) };
}

impl Interrupter {
    /// On the thread to be interrupted: its checks may be interrupted until the guard is
    /// dropped (which must happen on that thread, before it ends), and once stopped, its later
    /// checks answer "interrupted" at once. The thread's Z3 context is made at its first check,
    /// not here: most APCs are built without one (Hello: 1 ms, where making the context took
    /// 6-15 ms, and the DSE waited for the guide the build hands it meanwhile).
    pub fn enter(&self) -> InterruptibleGuard {
        ENTERED.with(|e| *e.borrow_mut() = Some(self.0.clone()));
        InterruptibleGuard(self.0.clone())
    }

    /// Interrupts the thread's current Z3 check, if any (and marks it stopped).
    pub fn interrupt(&self) {
        stop_all(std::slice::from_ref(&self.0));
    }
}

/// For a check on a thread inside an [`Interrupter`]: its slot announced (the thread's context
/// made) at the first check; `false` when it was stopped, and the check must not run.
pub(super) fn entered_may_check() -> bool {
    let Some(slot) = ENTERED.with(|e| e.borrow().clone()) else { return true };
    let announced = !matches!(slot.lock().unwrap_or_else(|e| e.into_inner()).state, WorkerState::Pending);
    if !announced {
        note_context();
        return announce_running(&slot, &z3::Context::thread_local());
    }
    let stopped = slot.lock().unwrap_or_else(|e| e.into_inner()).stop;
    !stopped
}

/// See [`Interrupter::enter`]: no interrupt reaches the thread's context once this is dropped.
pub struct InterruptibleGuard(SharedSlot);

impl Drop for InterruptibleGuard {
    fn drop(&mut self) {
        ENTERED.with(|e| *e.borrow_mut() = None);
        self.0.lock().unwrap_or_else(|e| e.into_inner()).state = WorkerState::Done;
    }
}

/// Interrupts every worker still running (and stops those not yet started).
pub(super) fn stop_all(slots: &[SharedSlot]) {
    for s in slots {
        let mut g = s.lock().unwrap_or_else(|e| e.into_inner());
        g.stop = true;
        if let WorkerState::Running(ctx) = g.state {
            unsafe { z3_sys::Z3_interrupt(ctx) };
        }
    }
}

/// The racing worker threads: on drop (normal return *or* unwinding) every worker is stopped
/// and joined, so no Z3 call of a race outlives [`race`].
///
/// Why this matters (`free(): corrupted unsorted chunks` / SIGSEGV after the report was
/// printed): the losers used to be left running detached. When `main` returned, `exit()` ran
/// libz3's static destructors (its global memory manager, symbol table, rational managers) and
/// the thread-local-destructor of the main thread's context while a loser was still inside Z3
/// (solving, unwinding from the interrupt, or deleting its context in its own TLS destructor):
/// a use-after-free of Z3's global state that corrupts the heap. `JoinHandle::join` is
/// `pthread_join`, which returns only after the thread's TLS destructors (the `Z3_del_context` of
/// its thread-local context) have run.
pub(super) struct Workers<'c> {
    pub(super) slots: Vec<SharedSlot>,
    pub(super) handles: Vec<std::thread::JoinHandle<()>>,
    /// Set once another engine has decided: then interrupted workers are waited for only
    /// [`CANCEL_GRACE`], not [`JOIN_GRACE`] (that engine's answer must not wait for ours).
    pub(super) cancel: &'c std::sync::atomic::AtomicBool,
}

/// How long a race past its deadline waits for the model of a worker interrupted while
/// minimising it ([`Objective`]).
pub(super) const CLAIMED_GRACE: Duration = Duration::from_millis(500);

/// How long [`Workers`] waits for interrupted workers before leaving them behind.
const JOIN_GRACE: Duration = Duration::from_secs(2);
/// The same after a cancel: Z3 often takes 0.3-0.5 s to notice an interrupt in a bit-blasting
/// query (measured on wp_windriver), and the portfolio's report waited that long after the
/// DSE's witness. Workers left behind end the process through [`exit_now`].
const CANCEL_GRACE: Duration = Duration::from_millis(5);

/// Set when a worker did not leave Z3 within [`JOIN_GRACE`] of being interrupted (some Z3
/// phases never look at the interrupt flag; one such query grew to 4.7 GB and kept a 10 s run
/// going for a minute). Such a worker is left running, detached; the process must then end
/// through [`exit_now`], never through `exit()` and libz3's static destructors.
static WORKERS_LEFT_RUNNING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records that a thread still inside Z3 was left running, detached (the APC's build once the
/// race no longer needs it): the process must then end through [`exit_now`].
pub fn note_thread_left_running() {
    WORKERS_LEFT_RUNNING.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Whether some solver thread was left running (see [`exit_now`]).
pub fn workers_left_running() -> bool {
    WORKERS_LEFT_RUNNING.load(std::sync::atomic::Ordering::SeqCst)
}

/// Ends the process at once with `code`, without running static destructors (libz3's global
/// state is still in use by a detached worker). Flush stdout and stderr before.
pub fn exit_now(code: i32) -> ! {
    crate::priority::restore_all();
    unsafe { libc::_exit(code) }
}

impl Drop for Workers<'_> {
    fn drop(&mut self) {
        // A worker notices an interrupt only inside Z3; in between (translation, model reading)
        // it checks `stop` itself. Interrupt repeatedly until each has left Z3 for good, or the
        // grace period is over.
        let since = std::time::Instant::now();
        while self.handles.iter().any(|h| !h.is_finished()) {
            let cancelled = self.cancel.load(std::sync::atomic::Ordering::Relaxed);
            if since.elapsed() > JOIN_GRACE || (cancelled && since.elapsed() > CANCEL_GRACE) {
                WORKERS_LEFT_RUNNING.store(true, std::sync::atomic::Ordering::SeqCst);
                tracing::debug!("a solver thread ignores its interrupt; leaving it behind");
                // What it still computes is of no use: at the lowest priority, out of the
                // APC's share, so that it takes no CPU from what comes next (it kept two
                // cores' worth of solving beside doif's witness reduction).
                for slot in &self.slots {
                    // Under the slot's lock a running worker cannot end (it marks itself done
                    // under it first), so its thread id is still its own.
                    let g = slot.lock().unwrap_or_else(|e| e.into_inner());
                    if matches!(g.state, WorkerState::Running(_)) && g.tid > 0 {
                        abandon_worker(g.tid);
                    }
                }
                let (done, running): (Vec<_>, Vec<_>) = self.handles.drain(..).partition(|h| h.is_finished());
                for h in done {
                    let _ = h.join();
                }
                // Detached: dropping a JoinHandle does not stop the thread.
                drop(running);
                return;
            }
            stop_all(&self.slots);
            std::thread::sleep(Duration::from_millis(2));
        }
        for h in self.handles.drain(..) {
            // A panicking worker has already reported through the panic hook; its query simply
            // has no entry.
            let _ = h.join();
        }
    }
}

/// Runs `work` on a solver thread with a Z3 context of its own, until `timeout` or until
/// `cancel` is set: then the context is interrupted (`work`'s current check answers unknown,
/// and the `stopped` it is given says so from then on, so that it ends its loop) and the
/// thread is left to `Workers` (joined briefly, else left behind to end through
/// [`exit_now`]). `Err` says why there is no answer.
pub fn in_worker<T: Send + 'static>(
    name: &str,
    timeout: Duration,
    cancel: &std::sync::atomic::AtomicBool,
    work: impl FnOnce(&dyn Fn() -> bool) -> T + Send + 'static,
) -> Result<T, String> {
    use std::sync::{Arc, Mutex};
    let slot = Arc::new(Mutex::new(Slot { state: WorkerState::Pending, stop: false, tid: 0 }));
    let (tx, rx) = std::sync::mpsc::channel::<T>();
    // Set at a cancel *and* at the deadline: Spacer may take seconds to notice an interrupt,
    // and the worker is then left behind at once (see `Workers`), not waited for.
    let stop_now = std::sync::atomic::AtomicBool::new(false);
    let mut workers = Workers { slots: vec![slot.clone()], handles: vec![], cancel: &stop_now };
    // Not one of the APC's solver workers (`set_worker_share`): its priority is its caller's
    // (a late prover's, `engine::Late`, stays low).
    let spawned = std::thread::Builder::new().name(name.into()).spawn(move || {
        note_context();
        let ctx = z3::Context::thread_local();
        if !announce_running(&slot, &ctx) {
            return;
        }
        let stopped = || slot.lock().unwrap_or_else(|e| e.into_inner()).stop;
        let answer = work(&stopped);
        slot.lock().unwrap_or_else(|e| e.into_inner()).state = WorkerState::Done;
        drop(ctx);
        let _ = tx.send(answer);
    });
    match spawned {
        Ok(h) => workers.handles.push(h),
        Err(e) => return Err(format!("cannot start the solver thread: {e}")),
    }
    let deadline = Instant::now() + timeout;
    loop {
        if cancel.load(std::sync::atomic::Ordering::Relaxed) {
            stop_now.store(true, std::sync::atomic::Ordering::SeqCst);
            return Err("cancelled".into());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            stop_now.store(true, std::sync::atomic::Ordering::SeqCst);
            return Err("the time budget ran out".into());
        }
        match rx.recv_timeout(left.min(Duration::from_millis(5))) {
            Ok(a) => return Ok(a),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Err("the solver thread ended without an answer".into()),
        }
    }
    // `workers` is dropped here: the worker is interrupted and joined.
}
