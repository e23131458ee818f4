//! Witness reduction: a witness that reached the target is made smaller, whichever engine found
//! it, by trying smaller candidates and keeping each one that still reaches the target.
//!
//! The engines' witnesses can be far larger than the target needs: the DSE's model for the path
//! it happened to take (`[[][][][][[9` where `[[[9` suffices), a fuzzer's input, bytes the solver
//! left at its default value (Hello: `"Hello"` followed by 315 `'l'`s). Only a run tells which
//! parts matter, so the reduction is a delta-debugging search over candidates judged by an
//! oracle, the native replay (see `analysis`): nothing here knows the program, and a candidate
//! is kept only when a real run of it entered the target. The verdict is never at stake (the
//! witness before reduction already reached the target); only the inputs reported get smaller.
//!
//! The steps, each repeated while it makes progress and the budget lasts:
//! 1. buffers: the shortest prefix that still reaches (galloping 0, 1, 2, 4, … then
//!    bisecting), then removing chunks of halving size (ddmin); a length parameter tied to the
//!    buffer ([`crate::ir::length_ties`]) loses as many as were removed below it; then the
//!    buffers behind its pointer slots, depth first, and last the bytes of a buffer with
//!    pointer slots (a struct's fields: a length, a position) one by one towards 0;
//! 2. integers: 0, else 1 or (when the value minus one misses too) the value itself, else the
//!    smallest magnitude found by a gallop up from below (when the range is wide) and a
//!    bisection;
//! 3. the nondet stream: the shortest prefix, then the shortest suffix of that, then each value
//!    like an integer.
//!
//! With [`Budget::at_once`] of 2, two candidates run at once where the search has two to try:
//! the next two steps of a gallop, two chunks, and two probes instead of one when bisecting
//! (a three-way split). Of two candidates the first in order that reaches is kept, as one at a
//! time would have: a gallop and the chunks keep what they kept before, a bisection keeps the
//! least length or value that reaches (the same one wherever reaching is monotone). The
//! reduction runs after the race, when both cores are free.
//!
//! Buffers keep the representation every engine uses: the data, then [`BUFFER_SLACK`] zeros.
//! Bytes in front of the address passed (`front`), buffers the user sized (`--arg-size`) and
//! buffers holding pointer slots are cut only where that cannot move what they hold.

use super::{buffer_data as data, ParamInput, Pointee, Witness, BUFFER_SLACK};
use std::time::Instant;

/// What the oracle said of a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judgement {
    /// A run of the candidate entered the target.
    Reaches,
    /// It ran and did not.
    Misses,
    /// No answer (no time left, the run could not start): the reduction stops.
    Stop,
}

/// How much a reduction may spend.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub deadline: Instant,
    /// Most candidates run.
    pub max_runs: u32,
    /// Candidates judged at once (1 or 2; each on a thread of its own).
    pub at_once: usize,
}

/// Largest tied length a buffer is grown to when the target needs the length.
const GROW_TO_LENGTH: u64 = 1 << 16;

/// A buffer parameter's constraints on cutting it.
#[derive(Clone, Copy, Debug, Default)]
pub struct BufferShape {
    /// The index of the integer parameter holding its length, if one is tied to it.
    pub length_param: Option<usize>,
    /// Its size was given by the user (`--arg-size`): its length stays.
    pub fixed: bool,
}

/// The result: the smallest witness found and what it took.
#[derive(Clone, Debug)]
pub struct Reduced {
    pub witness: Witness,
    /// Candidates run.
    pub runs: u32,
    /// Candidates kept (each one smaller than the one before).
    pub kept: u32,
}

/// Reduces `w` (which reached the target) with `judge` deciding each candidate, within
/// `budget`. `shapes[k]` describes parameter `k` when it is a buffer.
pub fn reduce(w: &Witness, shapes: &[BufferShape], budget: Budget, judge: &(dyn Fn(&Witness) -> Judgement + Sync)) -> Reduced {
    // Candidates derive from the canonical form (data + slack), which is not run on its own:
    // unless some candidate was kept (and so ran), the witness stays as it was.
    let mut r = Reducer { best: canonical(w), runs: 0, kept: 0, budget, stopped: false, judge };
    // A second round only when two or more inputs shrank in the first (a shorter buffer can
    // let its length shrink further, a smaller length can let bytes go): each step ends at its
    // own fixpoint, and a round retries every candidate that failed before (Hello World
    // Microsoft's 22 needed bytes took 99 replays in two rounds, 50 in one).
    for _round in 0..2 {
        let mut progressed = 0;
        let mut step = |r: &mut Reducer, f: &dyn Fn(&mut Reducer)| {
            let before = r.kept;
            f(r);
            progressed += usize::from(r.kept > before);
        };
        for k in 0..r.best.params.len() {
            let shape = shapes.get(k).copied().unwrap_or_default();
            step(&mut r, &|r| r.buffer_tree(k, shape));
        }
        for k in 0..r.best.params.len() {
            step(&mut r, &|r| r.integer(k));
        }
        step(&mut r, &|r| r.nondet());
        if progressed < 2 || r.stopped {
            break;
        }
    }
    for (k, shape) in shapes.iter().enumerate() {
        if let (Some(l), false) = (shape.length_param, shape.fixed) {
            r.buffer_to_length(k, l);
        }
    }
    let witness = if r.kept > 0 { r.best } else { w.clone() };
    Reduced { witness, runs: r.runs, kept: r.kept }
}

/// Only the tied lengths, whatever the reduction's budget (`--reduce 0` too): a length past its
/// whole buffer is tried at the buffer data's length, else the buffer grows to the length, so
/// that the witness shown never has a length its buffer lacks when a replay allows it. A few
/// runs at most, none when every length fits.
pub fn fit_lengths(w: &Witness, shapes: &[BufferShape], budget: Budget, judge: &(dyn Fn(&Witness) -> Judgement + Sync)) -> Reduced {
    let mut r = Reducer { best: w.clone(), runs: 0, kept: 0, budget, stopped: false, judge };
    for (k, shape) in shapes.iter().enumerate() {
        let Some(l) = shape.length_param else { continue };
        let Some(ParamInput::Int { width, value, .. }) = r.best.params.get(l) else { continue };
        let (width, value) = (*width, *value);
        let have = buffer_at(&r.best, &[k]).map_or(0, |(bytes, _, _)| bytes.len() as u64);
        if value <= have {
            continue;
        }
        let mut shorter = r.best.clone();
        if let ParamInput::Int { value, .. } = &mut shorter.params[l] {
            *value = r.data_len(&[k]) as u64 & mask(width);
        }
        if !r.try_keep(shorter) && !shape.fixed {
            r.buffer_to_length(k, l);
        }
    }
    Reduced { witness: r.best, runs: r.runs, kept: r.kept }
}

/// The size of a witness as a user sees it: buffer data bytes (slack and pointees included),
/// nondet values, and the bytes of non-zero integers' magnitudes.
pub fn size(w: &Witness) -> u64 {
    fn pointees(p: &[Pointee]) -> u64 {
        p.iter().map(|p| data(&p.bytes).len() as u64 + pointees(&p.pointees)).sum()
    }
    let params: u64 = w
        .params
        .iter()
        .map(|p| match p {
            ParamInput::Buffer { bytes, pointees: ps, .. } => data(bytes).len() as u64 + pointees(ps),
            ParamInput::Int { width, value, .. } => magnitude(*width, *value).checked_ilog2().map_or(0, |b| b as u64 / 8 + 1),
            ParamInput::Zero { .. } | ParamInput::Null { .. } | ParamInput::Function { .. } => 0,
        })
        .sum();
    params + w.nondet.len() as u64
}

/// The factor between the probes of [`Reducer::least_reaching_from_below`]'s gallop.
const GALLOP: u64 = 8;

/// Nondet values zeroed together below which a group that misses is not split further (its
/// values are tried one by one): splitting a group of needed values down to single ones would
/// cost two replays per value where one by one costs one.
const ZERO_GROUP_MIN: usize = 3;

struct Reducer<'a> {
    best: Witness,
    runs: u32,
    kept: u32,
    budget: Budget,
    stopped: bool,
    judge: &'a (dyn Fn(&Witness) -> Judgement + Sync),
}

impl Reducer<'_> {
    /// Runs `candidate`; keeps it when it reaches.
    fn try_keep(&mut self, candidate: Witness) -> bool {
        self.try_keep_first(vec![candidate]) == Some(0)
    }

    /// Whether two candidates may run at once now.
    fn pairs(&self) -> bool {
        self.budget.at_once >= 2
    }

    /// Runs `candidates` (at once, up to [`Budget::at_once`]) and keeps the first of them, in
    /// order, that reaches: its index. One that stops the reduction stops it unless one
    /// before it reached.
    fn try_keep_first(&mut self, candidates: Vec<Witness>) -> Option<usize> {
        if self.stopped || self.runs >= self.budget.max_runs || Instant::now() >= self.budget.deadline {
            self.stopped = true;
            return None;
        }
        let fresh: Vec<bool> = candidates.iter().map(|c| *c != self.best).collect();
        let room = (self.budget.max_runs - self.runs) as usize;
        let judged: Vec<Option<Judgement>> = if self.budget.at_once >= 2 && candidates.len() >= 2 && room >= 2 {
            let judge = self.judge;
            let (first, rest) = candidates.split_at(1);
            std::thread::scope(|scope| {
                let second = fresh[1].then(|| scope.spawn(move || judge(&rest[0])));
                let a = fresh[0].then(|| judge(&first[0]));
                let b = second.map(|h| h.join().unwrap_or(Judgement::Stop));
                vec![a, b]
            })
        } else {
            // One at a time: the next only while none reached.
            let mut out = vec![];
            for (c, f) in candidates.iter().zip(&fresh).take(room.max(1)) {
                let j = f.then(|| (self.judge)(c));
                let done = matches!(j, Some(Judgement::Reaches | Judgement::Stop));
                out.push(j);
                if done {
                    break;
                }
            }
            out
        };
        self.runs += judged.iter().flatten().count() as u32;
        for (k, j) in judged.into_iter().enumerate() {
            match j {
                Some(Judgement::Reaches) => {
                    self.best = candidates.into_iter().nth(k).expect("a judged candidate");
                    self.kept += 1;
                    return Some(k);
                }
                Some(Judgement::Stop) => {
                    self.stopped = true;
                    return None;
                }
                Some(Judgement::Misses) | None => {}
            }
        }
        None
    }

    /// The least `x` in `lo..works` for which `make(x)` reaches (`works` when none does),
    /// kept; `make(works)` is known to reach (or `works` is where the search gives up).
    /// Bisection, or with two at once a three-way split.
    fn least_reaching(&mut self, mut lo: u64, mut works: u64, make: &dyn Fn(&Self, u64) -> Witness) -> u64 {
        while lo < works && !self.stopped {
            if self.pairs() && works - lo >= 3 {
                let third = (works - lo) / 3;
                let (m1, m2) = (lo + third, lo + 2 * third);
                match self.try_keep_first(vec![make(self, m1), make(self, m2)]) {
                    Some(0) => works = m1,
                    Some(_) => (lo, works) = (m1 + 1, m2),
                    None => lo = m2 + 1,
                }
            } else {
                let mid = lo + (works - lo) / 2;
                if self.try_keep(make(self, mid)) {
                    works = mid;
                } else {
                    lo = mid + 1;
                }
            }
        }
        works
    }

    /// [`Self::least_reaching`] after a gallop up from `lo` by factors of [`GALLOP`]: the
    /// values a test needs are mostly small (a bound, a character) where the value given is
    /// anything (a solver's `x = 2^31 - 1` for `x > 20`): bisecting all 31 bits took 34 replays
    /// where the gallop finds 21 in 12. Where reaching is monotone the result is the same.
    fn least_reaching_from_below(&mut self, lo: u64, works: u64, make: &dyn Fn(&Self, u64) -> Witness) -> u64 {
        let (mut lo, mut works) = (lo, works);
        if works / lo.max(1) <= GALLOP * GALLOP {
            // A range this narrow takes as many bisection steps as a gallop would.
            return self.least_reaching(lo, works, make);
        }
        let mut probe = if lo < GALLOP { GALLOP } else { lo.saturating_mul(GALLOP) };
        while probe < works && !self.stopped {
            let after = probe.saturating_mul(GALLOP);
            let probes = if self.pairs() && after < works { vec![probe, after] } else { vec![probe] };
            match self.try_keep_first(probes.iter().map(|&v| make(self, v)).collect()) {
                Some(k) => {
                    if k == 1 {
                        lo = probes[0] + 1;
                    }
                    works = probes[k];
                    break;
                }
                None => lo = probes[probes.len() - 1] + 1,
            }
            probe = probes[probes.len() - 1].saturating_mul(GALLOP);
        }
        self.least_reaching(lo, works, make)
    }

    /// Cuts buffer parameter `k`, then, depth first, the buffers its pointer slots point to;
    /// then a buffer with pointer slots (a struct) gets its other bytes shrunk towards 0 (its
    /// fields: a length, a position), once what they point to is as short as it gets.
    fn buffer_tree(&mut self, k: usize, shape: BufferShape) {
        if let Some(l) = shape.length_param {
            self.length_within(k, l);
        }
        if !shape.fixed {
            self.buffer(&[k], shape.length_param);
        }
        self.below(&[k]);
    }

    /// A tied length beyond its buffer's data (a fuzzer's random `len`, reading past the bytes
    /// given into the slack) first tries the data's length: one replay, where bisecting it down
    /// from 2^28 would take 28, and a witness whose length fits its buffer is one a caller can
    /// pass.
    fn length_within(&mut self, buffer: usize, length: usize) {
        let Some(ParamInput::Int { width, value, .. }) = self.best.params.get(length) else { return };
        let (width, value) = (*width, *value);
        let n = self.data_len(&[buffer]) as u64;
        if value <= n || self.stopped {
            return;
        }
        let mut w = self.best.clone();
        if let ParamInput::Int { value, .. } = &mut w.params[length] {
            *value = n & mask(width);
        }
        self.try_keep(w);
    }

    /// A tied length the target needs past its buffer: a buffer that long instead, when it is
    /// small enough to build, so that the witness never shows a length past its buffer. Last,
    /// after every cut (a cut would take the zeros away again).
    fn buffer_to_length(&mut self, buffer: usize, length: usize) {
        let Some(ParamInput::Int { value, .. }) = self.best.params.get(length) else { return };
        let value = *value;
        let have = buffer_at(&self.best, &[buffer]).map_or(0, |(bytes, _, _)| bytes.len() as u64);
        if value <= have || value > GROW_TO_LENGTH || self.stopped {
            return;
        }
        let mut w = self.best.clone();
        if let Some(bytes) = bytes_at_mut(&mut w, &[buffer]) {
            bytes.resize(value as usize + BUFFER_SLACK, 0);
        }
        self.try_keep(w);
    }

    /// The pointees of the buffer at `path`, cut and shrunk, then its own fields.
    fn below(&mut self, path: &[usize]) {
        let count = buffer_at(&self.best, path).map_or(0, |(_, pointees, _)| pointees.len());
        for i in 0..count {
            if self.stopped {
                return;
            }
            let mut child = path.to_vec();
            child.push(i);
            self.buffer(&child, None);
            self.below(&child);
        }
        if count > 0 && !self.stopped {
            self.fields(path);
        }
    }

    /// Cuts the buffer at `path`: its shortest reaching prefix, then chunks.
    fn buffer(&mut self, path: &[usize], length_param: Option<usize>) {
        let Some((bytes, pointees, front)) = buffer_at(&self.best, path) else { return };
        // Nothing at or below a pointer slot moves: cuts start past the last one.
        let floor = pointees.iter().map(|p| p.offset as usize + 8).max().unwrap_or(0).max(front as usize);
        let n = data(bytes).len();
        if n <= floor {
            return;
        }
        // The shortest prefix: gallop up from the floor (two steps at once when pairs run),
        // then bisect.
        let (mut fails, mut works) = (None::<usize>, n);
        let next = |step: usize| if step == 0 { 1 } else { step * 2 };
        let mut step = 0;
        loop {
            let keep = floor + step;
            if keep >= works {
                break;
            }
            let after = floor + next(step);
            let candidates = if self.pairs() && after < works { vec![keep, after] } else { vec![keep] };
            let cuts = candidates.iter().map(|&k| self.cut(path, length_param, k, n - k)).collect();
            if let Some(k) = self.try_keep_first(cuts) {
                works = candidates[k];
                if k == 1 {
                    fails = Some(keep);
                }
                break;
            }
            if self.stopped {
                return;
            }
            fails = Some(*candidates.last().expect("a candidate"));
            step = next(if candidates.len() == 2 { next(step) } else { step });
        }
        let lo = fails.map_or(floor, |f| f + 1);
        self.least_reaching(lo as u64, works as u64, &|r: &Self, mid| {
            let len = r.data_len(path);
            r.cut(path, length_param, mid as usize, len - mid as usize)
        });
        // Chunks of halving power-of-two sizes anywhere past the floor (ddmin's complement
        // step; powers of two so that pairs, e.g. a `[]` or `][` of a nesting, get their turn).
        let half = (self.data_len(path) - floor.min(self.data_len(path))) / 2;
        let mut chunk = if half == 0 { 0 } else { 1 << half.ilog2() };
        while chunk >= 1 && !self.stopped {
            let mut at = floor;
            while at + chunk <= self.data_len(path) && !self.stopped {
                // Two chunks at once: the second is what one at a time tries next if the
                // first misses (and is dropped if it reaches).
                let mut cuts = vec![self.cut(path, length_param, at, chunk)];
                if self.pairs() && at + 2 * chunk <= self.data_len(path) {
                    cuts.push(self.cut(path, length_param, at + chunk, chunk));
                }
                let tried = cuts.len();
                match self.try_keep_first(cuts) {
                    Some(0) => {}
                    Some(_) => at += chunk,
                    None => at += tried * chunk,
                }
            }
            chunk /= 2;
        }
    }

    /// Shrinks each byte of the buffer at `path` outside its pointer slots towards 0.
    fn fields(&mut self, path: &[usize]) {
        let Some((bytes, pointees, _)) = buffer_at(&self.best, path) else { return };
        let slots: Vec<std::ops::Range<usize>> = pointees.iter().map(|p| p.offset as usize..p.offset as usize + 8).collect();
        let n = data(bytes).len();
        for at in (0..n).filter(|a| !slots.iter().any(|r| r.contains(a))) {
            let Some((bytes, _, _)) = buffer_at(&self.best, path) else { return };
            let Some(&b) = bytes.get(at) else { return };
            let path = path.to_vec();
            self.least(8, b as u64, move |w, v| {
                if let Some(bytes) = bytes_at_mut(w, &path) {
                    bytes[at] = v as u8;
                }
            });
        }
    }

    fn data_len(&self, path: &[usize]) -> usize {
        buffer_at(&self.best, path).map_or(0, |(bytes, _, _)| data(bytes).len())
    }

    /// The best witness with `count` data bytes of the buffer at `path` removed from index
    /// `at`, and its tied length lowered by the removed bytes that lay below it.
    fn cut(&self, path: &[usize], length_param: Option<usize>, at: usize, count: usize) -> Witness {
        let mut w = self.best.clone();
        if let Some(bytes) = bytes_at_mut(&mut w, path) {
            let mut d = data(bytes).to_vec();
            let end = (at + count).min(d.len());
            d.drain(at.min(end)..end);
            d.resize(d.len() + BUFFER_SLACK, 0);
            *bytes = d;
        }
        if let Some(ParamInput::Int { width, value, .. }) = length_param.and_then(|l| w.params.get_mut(l)) {
            let below = (*value as u128).min((at + count) as u128).saturating_sub(at as u128) as u64;
            *value = value.wrapping_sub(below) & mask(*width);
        }
        w
    }

    /// Shrinks integer parameter `k` towards 0.
    fn integer(&mut self, k: usize) {
        let Some(ParamInput::Int { width, value, .. }) = self.best.params.get(k) else { return };
        let (width, value) = (*width, *value);
        self.least(width, value, |w, v| {
            if let ParamInput::Int { value, .. } = &mut w.params[k] {
                *value = v;
            }
        });
    }

    /// The shortest reaching prefix of the nondet stream, then each value towards 0.
    fn nondet(&mut self) {
        let n = self.best.nondet.len() as u64;
        self.least_reaching(0, n, &|r: &Self, mid| {
            let mut w = r.best.clone();
            w.nondet.truncate(mid as usize);
            w
        });
        self.drop_leading();
        // Zeros first, many values at a time: a fuzzer's stream is mostly values the path
        // never compares (wp_running_example: 90 of 91 could be 0, which one by one took 77
        // replays and 0.24 s, longer than the search that found it).
        let nonzero: Vec<usize> = (0..self.best.nondet.len()).filter(|&k| self.best.nondet[k] != 0).collect();
        let mut zero_fails = vec![false; self.best.nondet.len()];
        self.zero_nondet(&nonzero, &mut zero_fails);
        for k in 0..self.best.nondet.len() {
            let v = self.best.nondet[k];
            let set = |w: &mut Witness, v| w.nondet[k] = v;
            if zero_fails[k] { self.least_above_zero(64, v, set) } else { self.least(64, v, set) }
        }
    }

    /// Drops values from the front of the nondet stream: the shortest suffix that still
    /// reaches. A fuzzer's stream often holds values a scan reads before the ones that matter
    /// (wp_hello: 25 characters before `Hello`, each of which then took its own replays to
    /// shrink, 123 in all). Where the first value matters (a search's stream, mostly), this
    /// is one round: the half and all but the first, at once.
    fn drop_leading(&mut self) {
        let n = self.best.nondet.len() as u64;
        if n < 2 || self.stopped {
            return;
        }
        let suffix = |r: &Self, m: u64| {
            let mut w = r.best.clone();
            let from = w.nondet.len().saturating_sub(m as usize);
            w.nondet.drain(..from);
            w
        };
        let half = n.div_ceil(2);
        let tries: Vec<u64> = if half < n - 1 { vec![half, n - 1] } else { vec![n - 1] };
        let Some(k) = self.try_keep_first(tries.iter().map(|&m| suffix(self, m)).collect()) else { return };
        let kept = tries[k];
        self.least_reaching(1, kept, &suffix);
    }

    /// Sets the nondet values at `at` to 0 together when that still reaches, else each half
    /// of them (down to groups of [`ZERO_GROUP_MIN`], whose values are then left to
    /// [`Self::least`] one by one); `fails[k]` records a value whose 0 alone missed.
    fn zero_nondet(&mut self, at: &[usize], fails: &mut [bool]) {
        if at.is_empty() || self.stopped {
            return;
        }
        let mut w = self.best.clone();
        for &k in at {
            w.nondet[k] = 0;
        }
        if self.try_keep(w) {
            return;
        }
        if at.len() == 1 {
            fails[at[0]] = !self.stopped;
        } else if at.len() > ZERO_GROUP_MIN {
            let (a, b) = at.split_at(at.len() / 2);
            self.zero_nondet(a, fails);
            self.zero_nondet(b, fails);
        }
    }

    /// Keeps the value of least magnitude (as a `width`-bit two's complement number) that
    /// reaches, set into the witness by `set`: 0 first, then bisection between 0 and `value`.
    fn least(&mut self, width: u32, value: u64, set: impl Fn(&mut Witness, u64)) {
        self.least_from(width, value, set, false)
    }

    /// [`Self::least`] when 0 is known to miss.
    fn least_above_zero(&mut self, width: u32, value: u64, set: impl Fn(&mut Witness, u64)) {
        self.least_from(width, value, set, true)
    }

    fn least_from(&mut self, width: u32, value: u64, set: impl Fn(&mut Witness, u64), zero_misses: bool) {
        let m = magnitude(width, value);
        if m == 0 || self.stopped {
            return;
        }
        let negative = is_negative(width, value);
        let of = |mag: u64| if negative { mag.wrapping_neg() & mask(width) } else { mag };
        let candidate = |r: &Self, mag: u64| {
            let mut w = r.best.clone();
            set(&mut w, of(mag));
            w
        };
        if !zero_misses && self.try_keep(candidate(self, 0)) {
            return;
        }
        if m >= 3 {
            // The two ends first, at once: 1 (any non-zero value will do: a character before a
            // match, a count that only must not be 0) and m - 1 (when it misses, m is exactly
            // what a test compares with: `c == 'H'`). Bisecting each such value took about
            // seven replays where these take one round: a fuzzer's 31 characters of
            // `wp_hello` took the whole budget of 200 replays, three times the search's time.
            // Where reaching is monotone in the magnitude, the result is the bisection's.
            // (A stopped reduction runs nothing: `try_keep_first` says None.)
            if self.try_keep_first(vec![candidate(self, 1), candidate(self, m - 1)]) == Some(1) {
                self.least_reaching_from_below(2, m - 1, &|r: &Self, mag| candidate(r, mag));
            }
            return;
        }
        // Bisection on the magnitude: the least in 1..=m that reaches (m does).
        self.least_reaching(1, m, &|r: &Self, mag| candidate(r, mag));
    }
}

/// The buffer at `path` (a parameter, then pointee indices): its bytes, pointees and front.
fn buffer_at<'w>(w: &'w Witness, path: &[usize]) -> Option<(&'w [u8], &'w [Pointee], u64)> {
    let (first, rest) = path.split_first()?;
    let ParamInput::Buffer { bytes, pointees, front, .. } = w.params.get(*first)? else { return None };
    let (mut bytes, mut pointees, mut front) = (bytes.as_slice(), pointees.as_slice(), *front);
    for &i in rest {
        let p = pointees.get(i)?;
        (bytes, pointees, front) = (&p.bytes, &p.pointees, 0);
    }
    Some((bytes, pointees, front))
}

fn bytes_at_mut<'w>(w: &'w mut Witness, path: &[usize]) -> Option<&'w mut Vec<u8>> {
    let (first, rest) = path.split_first()?;
    let ParamInput::Buffer { bytes, pointees, .. } = w.params.get_mut(*first)? else { return None };
    let (mut bytes, mut pointees) = (bytes, pointees);
    for &i in rest {
        let p = pointees.get_mut(i)?;
        (bytes, pointees) = (&mut p.bytes, &mut p.pointees);
    }
    Some(bytes)
}

/// `w` with every buffer as its data followed by exactly [`BUFFER_SLACK`] zeros.
fn canonical(w: &Witness) -> Witness {
    fn pointee(p: &Pointee) -> Pointee {
        match &p.holds {
            Some(_) => p.clone(),
            None => Pointee::buffer(p.offset, with_slack(data(&p.bytes)), p.pointees.iter().map(pointee).collect()),
        }
    }
    let mut w = w.clone();
    for p in &mut w.params {
        if let ParamInput::Buffer { bytes, pointees, .. } = p {
            *bytes = with_slack(data(bytes));
            *pointees = pointees.iter().map(pointee).collect();
            zero_slots(bytes, pointees);
        }
    }
    w
}

/// Zeros the pointer slots of `bytes` (and of its pointees'): the replay writes the pointers
/// there, so what the engine left in them is never read; zeros show that.
fn zero_slots(bytes: &mut [u8], pointees: &mut [Pointee]) {
    for p in pointees {
        let at = p.offset as usize;
        if let Some(slot) = bytes.get_mut(at..at + 8) {
            slot.fill(0);
        }
        zero_slots(&mut p.bytes, &mut p.pointees);
    }
}

fn with_slack(d: &[u8]) -> Vec<u8> {
    let mut v = d.to_vec();
    v.resize(d.len() + BUFFER_SLACK, 0);
    v
}


fn mask(width: u32) -> u64 {
    if width >= 64 { u64::MAX } else { (1u64 << width) - 1 }
}

fn is_negative(width: u32, value: u64) -> bool {
    width > 1 && width <= 64 && (value >> (width - 1)) & 1 == 1
}

/// `value`'s distance from 0 as a `width`-bit two's complement number.
fn magnitude(width: u32, value: u64) -> u64 {
    let v = value & mask(width);
    if is_negative(width, v) { v.wrapping_neg() & mask(width) } else { v }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn buf(name: &str, d: &[u8]) -> ParamInput {
        ParamInput::Buffer { name: name.into(), bytes: with_slack(d), pointees: vec![], front: 0 }
    }
    fn int(name: &str, width: u32, value: u64) -> ParamInput {
        ParamInput::Int { name: name.into(), width, value }
    }
    fn budget() -> Budget {
        Budget { deadline: Instant::now() + Duration::from_secs(5), max_runs: 1000, at_once: 1 }
    }
    fn bytes_of(w: &Witness, k: usize) -> Vec<u8> {
        match &w.params[k] {
            ParamInput::Buffer { bytes, .. } => data(bytes).to_vec(),
            _ => panic!("not a buffer"),
        }
    }
    fn value_of(w: &Witness, k: usize) -> u64 {
        match &w.params[k] {
            ParamInput::Int { value, .. } => *value,
            _ => panic!("not an int"),
        }
    }

    /// A bracket parser's target (a `[9` at nesting depth 2, within `len` bytes), as an oracle.
    fn brackets(w: &Witness) -> Judgement {
        let (s, len) = (bytes_of(w, 0), value_of(w, 1) as usize);
        let mut depth = 0;
        for (i, c) in s.iter().take(len).enumerate() {
            match c {
                b'[' if depth == 2 && s.get(i + 1) == Some(&b'9') && i + 1 < len => return Judgement::Reaches,
                b'[' => depth += 1,
                b']' => depth -= 1,
                _ => {}
            }
        }
        Judgement::Misses
    }

    #[test]
    fn a_bracket_witness_loses_its_detours_and_its_length_follows() {
        let w = Witness { params: vec![buf("s", b"[[][][][][[9"), int("len", 64, 12)], nondet: vec![] };
        let r = reduce(&w, &[BufferShape { length_param: Some(1), fixed: false }, BufferShape::default()], budget(), &brackets);
        assert_eq!(bytes_of(&r.witness, 0), b"[[[9");
        assert_eq!(value_of(&r.witness, 1), 4);
        assert!(r.kept > 0 && r.runs >= r.kept);
    }

    /// Two candidates at once keep what one at a time keeps: the gallop's and the chunks' first
    /// reaching candidate in order, and the least reaching length or value of a bisection.
    #[test]
    fn two_at_once_reduce_to_what_one_at_a_time_does() {
        let pairs = Budget { at_once: 2, ..budget() };
        let w = Witness { params: vec![buf("s", b"[[][][][][[9"), int("len", 64, 12)], nondet: vec![] };
        let shapes = [BufferShape { length_param: Some(1), fixed: false }, BufferShape::default()];
        let (one, two) = (reduce(&w, &shapes, budget(), &brackets), reduce(&w, &shapes, pairs, &brackets));
        assert_eq!(two.witness, one.witness);
        assert_eq!(bytes_of(&two.witness, 0), b"[[[9");
        let mut d = b"xxHello".to_vec();
        d.extend(std::iter::repeat_n(b'l', 315));
        let w = Witness { params: vec![buf("A", &d)], nondet: vec![] };
        let hello = |w: &Witness| if bytes_of(w, 0).windows(5).any(|x| x == b"Hello") { Judgement::Reaches } else { Judgement::Misses };
        assert_eq!(bytes_of(&reduce(&w, &[BufferShape::default()], pairs, &hello).witness, 0), b"Hello");
        let w = Witness { params: vec![int("x", 32, 134_217_728), int("y", 32, (-1_000_000i32) as u32 as u64)], nondet: vec![7, 1 << 40, 3] };
        let judge = |w: &Witness| {
            let (x, y) = (value_of(w, 0) as u32 as i32, value_of(w, 1) as u32 as i32);
            if x >= 34 && y <= -5 && w.nondet.len() >= 2 && w.nondet[1] > 100 { Judgement::Reaches } else { Judgement::Misses }
        };
        let r = reduce(&w, &[], pairs, &judge);
        assert_eq!((value_of(&r.witness, 0), value_of(&r.witness, 1) as u32 as i32), (34, -5));
        assert_eq!(r.witness.nondet, vec![0, 101]);
        // At most one run more per step than one at a time, on two cores: fewer rounds.
        let one = reduce(&w, &[], budget(), &judge);
        assert!(r.runs <= 2 * one.runs, "{} runs against {}", r.runs, one.runs);
    }

    #[test]
    fn a_length_past_its_buffer_first_tries_the_buffer_s_length() {
        // A fuzzer's witness: `len` far beyond the 3 bytes given; the target needs `<<x` only.
        let w = Witness { params: vec![buf("s", b"<<x"), int("len", 64, 364_904_448)], nondet: vec![] };
        let judge = |w: &Witness| {
            let (s, len) = (bytes_of(w, 0), value_of(w, 1) as usize);
            if len >= 3 && s.starts_with(b"<<x") { Judgement::Reaches } else { Judgement::Misses }
        };
        let r = reduce(&w, &[BufferShape { length_param: Some(1), fixed: false }, BufferShape::default()], budget(), &judge);
        assert_eq!((bytes_of(&r.witness, 0), value_of(&r.witness, 1)), (b"<<x".to_vec(), 3));
        assert!(r.runs <= 12, "{} runs (bisecting the length alone takes 28)", r.runs);
    }

    #[test]
    fn a_length_the_target_needs_gets_a_buffer_that_long() {
        let w = Witness { params: vec![buf("s", b"ab"), int("len", 64, 100)], nondet: vec![] };
        let shapes = [BufferShape { length_param: Some(1), fixed: false }];
        let r = reduce(&w, &shapes, budget(), &|w: &Witness| if value_of(w, 1) >= 100 { Judgement::Reaches } else { Judgement::Misses });
        assert_eq!(value_of(&r.witness, 1), 100);
        let ParamInput::Buffer { bytes, .. } = &r.witness.params[0] else { panic!("a buffer") };
        assert!(bytes.len() >= 100, "{:?}", r.witness);
    }

    #[test]
    fn a_string_search_keeps_the_string_and_drops_the_rest() {
        let mut d = b"xxHello".to_vec();
        d.extend(std::iter::repeat_n(b'l', 315));
        let w = Witness { params: vec![buf("A", &d)], nondet: vec![] };
        let judge = |w: &Witness| if bytes_of(w, 0).windows(5).any(|x| x == b"Hello") { Judgement::Reaches } else { Judgement::Misses };
        let r = reduce(&w, &[BufferShape::default()], budget(), &judge);
        assert_eq!(bytes_of(&r.witness, 0), b"Hello");
        assert!(r.runs < 60, "{} runs", r.runs);
    }

    #[test]
    fn integers_shrink_towards_zero_as_signed_numbers() {
        // Reaches when x >= 34 and y <= -5 (32-bit), z anything.
        let w = Witness { params: vec![int("x", 32, 134_217_728), int("y", 32, (-1_000_000i32) as u32 as u64), int("z", 8, 200)], nondet: vec![7, 1 << 40, 3] };
        let judge = |w: &Witness| {
            let (x, y) = (value_of(w, 0) as u32 as i32, value_of(w, 1) as u32 as i32);
            if x >= 34 && y <= -5 && w.nondet.len() >= 2 && w.nondet[1] > 100 { Judgement::Reaches } else { Judgement::Misses }
        };
        let r = reduce(&w, &[], budget(), &judge);
        assert_eq!(value_of(&r.witness, 0), 34);
        assert_eq!(value_of(&r.witness, 1) as u32 as i32, -5);
        assert_eq!(value_of(&r.witness, 2), 0);
        assert_eq!(r.witness.nondet, vec![0, 101]);
    }

    /// A solver's `x = 2^31 - 1` where `x > 20` is all the target needs (ai_listing1): the
    /// gallop from below finds 21 in a dozen runs, where bisecting 31 bits took 34; a value
    /// needed near the one given costs a few runs more than the bisection alone.
    #[test]
    fn a_small_needed_value_is_found_from_below() {
        for (at_once, given, needed, most) in [(2, 0x7fff_ffffu64, 21u64, 14), (1, 0x7fff_ffff, 21, 14), (2, 0x7fff_ffff, 1_500_000_000, 52)] {
            let w = Witness { params: vec![int("x", 32, given)], nondet: vec![] };
            let judge = |w: &Witness| if value_of(w, 0) as u32 as i32 >= needed as i32 { Judgement::Reaches } else { Judgement::Misses };
            let r = reduce(&w, &[], Budget { at_once, ..budget() }, &judge);
            assert_eq!(value_of(&r.witness, 0), needed);
            assert!(r.runs <= most, "{} runs for {needed} ({at_once} at once)", r.runs);
        }
    }

    #[test]
    fn a_stream_of_values_nobody_compares_is_zeroed_in_few_runs() {
        // A fuzzer's stream: 64 values read, the target needs only the count at 0 to be 63 and
        // the value at 40 to be at least 7; every other value is noise.
        let nondet: Vec<u64> = (0..64).map(|k| if k == 0 { 63 } else { 1000 + k * 37 }).collect();
        let w = Witness { params: vec![], nondet };
        let needs = |w: &Witness| if w.nondet.len() == 64 && w.nondet[0] == 63 && w.nondet[40] >= 7 { Judgement::Reaches } else { Judgement::Misses };
        let r = reduce(&w, &[], budget(), &needs);
        let mut want = vec![0u64; 64];
        (want[0], want[40]) = (63, 7);
        assert_eq!(r.witness.nondet, want);
        // One by one, each of the 63 noise values took a run of its own.
        assert!(r.runs < 50, "{} runs", r.runs);
    }

    #[test]
    fn values_that_are_all_needed_cost_about_one_run_each_to_keep() {
        let w = Witness { params: vec![], nondet: vec![5; 12] };
        let r = reduce(&w, &[], budget(), &|w: &Witness| if w.nondet.len() == 12 && w.nondet.iter().all(|&v| v == 5) { Judgement::Reaches } else { Judgement::Misses });
        assert_eq!(r.witness.nondet, vec![5; 12]);
        // The prefix (4), the groups (7), each value's bisection towards 0 (3 each, 0 skipped
        // where its group of one missed).
        assert!(r.runs <= 4 + 7 + 12 * 4, "{} runs", r.runs);
    }

    /// A fuzzer's string (wp_hello): random characters, `Hello` among them, the rest after it.
    /// Those before it must stay non-zero (a 0 ends the string) and become 1; `Hello` stays,
    /// each of its characters kept in one round (1 and the value minus one miss), not bisected.
    #[test]
    fn characters_before_a_match_become_one_and_the_match_stays_in_few_runs() {
        let mut stream: Vec<u64> = (0..31u64).map(|k| 33 + (k * 37) % 90).collect();
        for (k, c) in b"Hello".iter().enumerate() {
            stream[10 + k] = *c as u64;
        }
        let w = Witness { params: vec![], nondet: stream };
        let has_hello = |w: &Witness| {
            let s: Vec<u8> = w.nondet.iter().map(|&v| v as u8).take_while(|&c| c != 0).collect();
            w.nondet.len() == 31 && s.windows(5).any(|x| x == b"Hello")
        };
        let r = reduce(&w, &[], budget(), &|w: &Witness| if has_hello(w) { Judgement::Reaches } else { Judgement::Misses });
        let mut want = vec![1u64; 10];
        want.extend(b"Hello".iter().map(|&c| c as u64));
        want.extend([0; 16]);
        assert_eq!(r.witness.nondet, want);
        // Bisecting each of the 15 characters took about 8 runs each.
        assert!(r.runs <= 80, "{} runs", r.runs);
    }

    /// As the driver reads it, a stream that runs out gives zeros: then the characters before
    /// the match go (the shortest suffix), instead of each becoming 1 in runs of its own.
    #[test]
    fn characters_before_a_match_are_dropped_from_the_front() {
        let mut stream: Vec<u64> = (0..31u64).map(|k| 33 + (k * 37) % 90).collect();
        for (k, c) in b"Hello".iter().enumerate() {
            stream[25 + k] = *c as u64;
        }
        let w = Witness { params: vec![], nondet: stream };
        let has_hello = |w: &Witness| {
            let s: Vec<u8> = (0..31).map(|k| w.nondet.get(k).copied().unwrap_or(0) as u8).take_while(|&c| c != 0).collect();
            s.windows(5).any(|x| x == b"Hello")
        };
        let judge = |w: &Witness| if has_hello(w) { Judgement::Reaches } else { Judgement::Misses };
        for at_once in [1, 2] {
            let r = reduce(&w, &[], Budget { at_once, ..budget() }, &judge);
            assert_eq!(r.witness.nondet, b"Hello".iter().map(|&c| c as u64).collect::<Vec<_>>(), "at once: {at_once}");
            // Each of the 25 characters before the match took about three runs of its own.
            assert!(r.runs <= 32, "{} runs (at once: {at_once})", r.runs);
        }
        // Where the first value is needed, the search for a suffix costs one round.
        let hello = Witness { params: vec![], nondet: b"Hello".iter().map(|&c| c as u64).collect() };
        let r = reduce(&hello, &[], Budget { at_once: 2, ..budget() }, &judge);
        assert_eq!(r.witness.nondet, hello.nondet);
        // 21 without the search for a suffix: its one round adds two.
        assert!(r.runs <= 23, "{} runs", r.runs);
    }

    #[test]
    fn the_budget_and_the_oracle_stop_the_search_with_the_best_so_far() {
        let w = Witness { params: vec![int("x", 64, 1000)], nondet: vec![] };
        let r = reduce(&w, &[], Budget { deadline: Instant::now() + Duration::from_secs(5), max_runs: 3, at_once: 1 }, &|w: &Witness| if value_of(w, 0) >= 10 { Judgement::Reaches } else { Judgement::Misses });
        assert_eq!(r.runs, 3);
        assert!(value_of(&r.witness, 0) >= 10 && value_of(&r.witness, 0) < 1000);
        let r = reduce(&w, &[], budget(), &|_| Judgement::Stop);
        assert_eq!((r.runs, value_of(&r.witness, 0)), (1, 1000));
    }

    #[test]
    fn fronts_pointer_slots_and_user_sizes_are_not_cut() {
        let ptr = ParamInput::Buffer {
            name: "p".into(),
            bytes: with_slack(&[1; 24]),
            pointees: vec![Pointee::buffer(8, with_slack(b"abc"), vec![])],
            front: 0,
        };
        let front = ParamInput::Buffer { name: "s".into(), bytes: with_slack(&[9, 9, 9, 9, 1, 2]), pointees: vec![], front: 4 };
        let sized = buf("t", b"zzzz");
        let w = Witness { params: vec![ptr, front, sized], nondet: vec![] };
        let shapes = [BufferShape::default(), BufferShape::default(), BufferShape { length_param: None, fixed: true }];
        let r = reduce(&w, &shapes, budget(), &|_| Judgement::Reaches);
        assert_eq!(bytes_of(&r.witness, 0).len(), 16, "the pointer slot at 8..16 stays");
        assert_eq!(bytes_of(&r.witness, 1), vec![9, 9, 9, 9], "the front stays");
        assert_eq!(bytes_of(&r.witness, 2), b"zzzz", "--arg-size stays");
    }

    #[test]
    fn a_struct_s_pointee_is_cut_before_its_fields_shrink() {
        // struct { char *text; size_t len; }: reaches when text[0..len] holds two tabs.
        let mut text = vec![b' '; 30];
        text.extend(b"\t\t");
        text.extend(vec![b' '; 200]);
        let mut st = vec![7u8; 8];
        st.extend(40u64.to_le_bytes());
        let p = ParamInput::Buffer { name: "p".into(), bytes: with_slack(&st), pointees: vec![Pointee::buffer(0, with_slack(&text), vec![])], front: 0 };
        let w = Witness { params: vec![p], nondet: vec![] };
        let judge = |w: &Witness| {
            let (st, ps, _) = buffer_at(w, &[0]).unwrap();
            let len = u64::from_le_bytes(st[8..16].try_into().unwrap()) as usize;
            let text = &ps[0].bytes;
            if text.iter().take(len).filter(|c| **c == b'\t').count() == 2 { Judgement::Reaches } else { Judgement::Misses }
        };
        let r = reduce(&w, &[BufferShape::default()], budget(), &judge);
        let (st, ps, _) = buffer_at(&r.witness, &[0]).unwrap();
        assert_eq!(data(st), &[0, 0, 0, 0, 0, 0, 0, 0, 2], "the slot zeroed, len 2");
        assert_eq!(data(&ps[0].bytes), b"\t\t");
    }

    #[test]
    fn sizes_count_data_values_and_magnitudes() {
        let w = Witness { params: vec![buf("s", b"abc"), int("n", 32, 300), int("m", 32, u32::MAX as u64)], nondet: vec![1, 2] };
        assert_eq!(size(&w), 3 + 2 + 1 + 2);
    }
}
