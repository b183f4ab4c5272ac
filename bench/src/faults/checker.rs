//! Linearizability checking of a recorded history against a model of
//! pairs of paths.
//!
//! Keyed operations touch the paths `k<i>`. Paths `k<2j>` and `k<2j+1>` form
//! pair `j`: every operation touches one path of one pair (create, mkdirs,
//! delete, setPermission, getFileInfo) or both paths of one pair (rename2,
//! without overwrite, from one to the other), so pairs are the objects of
//! the model. A path's state is a small register: absent, a file with a
//! mode, or a directory with a mode; a pair's state is its two registers.
//! Since operations on different pairs commute, the history is
//! linearizable iff each pair's sub-history is (P-compositionality), and
//! each one is checked alone with the Wing–Gong–Lowe search: walk the events
//! in time order; at a call, try to linearize that operation now (the model
//! must accept its recorded output) and remember the configuration
//! (linearized set, state) so no configuration is explored twice; at a
//! return whose operation was not linearized yet, backtrack.
//!
//! An operation whose outcome the client never learned (the call timed out
//! or failed with a retryable error after its retries) has no return event
//! and no recorded output: it may be linearized anywhere after its call, or
//! not at all, since it may never have reached the log.
//!
//! A rename applied twice (a retry after failover not answered from the
//! retry table) answers its own client FileNotFound, which the model
//! refuses: the source is where the first application left it, gone.

use std::collections::HashSet;
use std::fmt;

/// The state of one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Value {
    Absent,
    File(u16),
    Dir(u16),
}

/// Mode of a file created without a permission (0666 less the umask 022).
pub const NEW_FILE_MODE: u16 = 0o644;
/// Mode of a directory made without a permission (0777 less the umask 022).
pub const NEW_DIR_MODE: u16 = 0o755;

/// The state of one pair of paths (see the module docs).
pub type PairState = [Value; 2];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// create(overwrite = false).
    Create,
    /// rename2(overwrite = false) of the path to the other path of its pair.
    Rename,
    /// mkdirs.
    Mkdir,
    /// delete(recursive = true).
    Delete,
    /// setPermission.
    Chmod(u16),
    /// getFileInfo.
    Stat,
}

/// What a completed call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Success with no value (create, mkdirs' true, chmod).
    Done,
    /// FileAlreadyExists (or AlreadyBeingCreated: a file open by someone).
    Exists,
    FileNotFound,
    /// delete's boolean.
    Deleted(bool),
    Stat(Value),
    /// Any other answer: never what the model expects, so a violation.
    Other(String),
}

/// One call of the history. `ret_ns` is `None` when the outcome is unknown.
#[derive(Debug, Clone)]
pub struct Op {
    pub client: usize,
    pub key: usize,
    pub input: Input,
    pub output: Option<Output>,
    pub call_ns: u64,
    pub ret_ns: Option<u64>,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |ns: u64| ns as f64 / 1e6;
        write!(
            f,
            "client {:>2} key {} {:?} -> {} [{:.3} ms .. {}]",
            self.client,
            self.key,
            self.input,
            self.output.as_ref().map_or("unknown".to_string(), |o| format!("{o:?}")),
            ms(self.call_ns),
            self.ret_ns.map_or("never".to_string(), |r| format!("{:.3} ms", ms(r)))
        )
    }
}

/// The pair `key`'s path belongs to, and its place in the pair.
pub fn pair_of(key: usize) -> (usize, usize) {
    (key / 2, key % 2)
}

/// The model on a pair: the state after `input` on the pair's path `slot`,
/// if `output` (when known) is what the operation returns there.
pub fn step_pair(state: PairState, slot: usize, input: Input, output: Option<&Output>) -> Option<PairState> {
    if input == Input::Rename {
        let (src, dst) = (slot, 1 - slot);
        let (next, expected) = match (state[src], state[dst]) {
            (Value::Absent, _) => (state, Output::FileNotFound),
            (_, Value::File(_) | Value::Dir(_)) => (state, Output::Exists),
            (moved, Value::Absent) => {
                let mut n = state;
                n[dst] = moved;
                n[src] = Value::Absent;
                (n, Output::Done)
            }
        };
        return match output {
            None => Some(next),
            Some(o) if *o == expected => Some(next),
            Some(_) => None,
        };
    }
    let mut next = state;
    next[slot] = step(state[slot], input, output)?;
    Some(next)
}

/// The model on one path: the state after `input` in `state`, if `output`
/// (when known) is what the operation returns there.
pub fn step(state: Value, input: Input, output: Option<&Output>) -> Option<Value> {
    let (next, expected) = match (input, state) {
        (Input::Rename, _) => unreachable!("a rename is a pair's operation (step_pair)"),
        (Input::Create, Value::Absent) => (Value::File(NEW_FILE_MODE), Output::Done),
        (Input::Create, s) => (s, Output::Exists),
        (Input::Mkdir, Value::Absent) => (Value::Dir(NEW_DIR_MODE), Output::Done),
        (Input::Mkdir, s @ Value::Dir(_)) => (s, Output::Done),
        (Input::Mkdir, s @ Value::File(_)) => (s, Output::Exists),
        (Input::Delete, Value::Absent) => (Value::Absent, Output::Deleted(false)),
        (Input::Delete, _) => (Value::Absent, Output::Deleted(true)),
        (Input::Chmod(_), Value::Absent) => (Value::Absent, Output::FileNotFound),
        (Input::Chmod(m), Value::File(_)) => (Value::File(m), Output::Done),
        (Input::Chmod(m), Value::Dir(_)) => (Value::Dir(m), Output::Done),
        (Input::Stat, s) => (s, Output::Stat(s)),
    };
    match output {
        None => Some(next),
        Some(o) if *o == expected => Some(next),
        Some(_) => None,
    }
}

/// Why a path's history is not linearizable.
#[derive(Debug)]
pub struct Violation {
    pub key: usize,
    /// The completed call no linearization could fit, at the deepest point reached.
    pub blocked: Op,
    /// Calls overlapping it, for the report.
    pub concurrent: Vec<Op>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "key {}: no linearization fits {}", self.key, self.blocked)?;
        for o in &self.concurrent {
            writeln!(f, "    concurrent: {o}")?;
        }
        Ok(())
    }
}

/// The most calls overlapping a blocked one that a report lists.
const MAX_REPORTED_CONCURRENT: usize = 24;
/// Bound on configurations explored per path, so a pathological history
/// ends as an error rather than a hang.
pub const MAX_CONFIGURATIONS_PER_KEY: usize = 20_000_000;

const NIL: usize = usize::MAX;

#[derive(Debug, PartialEq, Eq)]
pub enum KeyVerdict {
    Linearizable,
    Violation(usize /* op index */),
    TooLarge,
}

/// Check one pair's operations (initial state: both paths absent).
pub fn check_key(ops: &[Op]) -> KeyVerdict {
    // Events: (time, is_return, op). Calls sort before returns at equal
    // times, which treats touching operations as concurrent.
    let mut events: Vec<(u64, bool, usize)> = Vec::with_capacity(ops.len() * 2);
    for (i, o) in ops.iter().enumerate() {
        events.push((o.call_ns, false, i));
        if let Some(r) = o.ret_ns {
            assert!(r >= o.call_ns, "a call returns after it is made: {o}");
            events.push((r, true, i));
        }
    }
    events.sort_unstable();
    let n = events.len();
    let head = n;
    let mut next = vec![NIL; n + 1];
    let mut prev = vec![NIL; n + 1];
    let mut ret_of = vec![NIL; ops.len()];
    for (e, (_, is_ret, op)) in events.iter().enumerate() {
        if *is_ret {
            ret_of[*op] = e;
        }
        next[e] = if e + 1 < n { e + 1 } else { NIL };
        prev[e] = if e == 0 { head } else { e - 1 };
    }
    next[head] = if n > 0 { 0 } else { NIL };

    let unlink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, e: usize| {
        let (p, nx) = (prev[e], next[e]);
        next[p] = nx;
        if nx != NIL {
            prev[nx] = p;
        }
    };
    let relink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, e: usize| {
        let (p, nx) = (prev[e], next[e]);
        next[p] = e;
        if nx != NIL {
            prev[nx] = e;
        }
    };

    let words = ops.len().div_ceil(64);
    let mut linearized = vec![0u64; words];
    let mut seen: HashSet<(Vec<u64>, PairState)> = HashSet::new();
    let mut stack: Vec<(usize, PairState)> = Vec::new();
    let mut state = [Value::Absent; 2];
    let mut deepest = (0usize, NIL);
    let mut entry = next[head];
    while entry != NIL {
        let (_, is_ret, op) = events[entry];
        if !is_ret {
            let o = &ops[op];
            if let Some(s) = step_pair(state, pair_of(o.key).1, o.input, o.output.as_ref()) {
                linearized[op / 64] |= 1 << (op % 64);
                if seen.insert((linearized.clone(), s)) {
                    if seen.len() > MAX_CONFIGURATIONS_PER_KEY {
                        return KeyVerdict::TooLarge;
                    }
                    stack.push((entry, state));
                    state = s;
                    unlink(&mut next, &mut prev, entry);
                    if ret_of[op] != NIL {
                        unlink(&mut next, &mut prev, ret_of[op]);
                    }
                    entry = next[head];
                    continue;
                }
                linearized[op / 64] &= !(1 << (op % 64));
            }
            entry = next[entry];
        } else {
            // A completed call not linearized by its return: undo the last choice.
            if stack.len() >= deepest.0 {
                deepest = (stack.len(), op);
            }
            let Some((e, s)) = stack.pop() else {
                return KeyVerdict::Violation(deepest.1);
            };
            let undone = events[e].2;
            linearized[undone / 64] &= !(1 << (undone % 64));
            state = s;
            if ret_of[undone] != NIL {
                relink(&mut next, &mut prev, ret_of[undone]);
            }
            relink(&mut next, &mut prev, e);
            entry = next[e];
        }
    }
    // Only unknown calls are left (a known call's return would come first).
    KeyVerdict::Linearizable
}

/// Check a whole history: every pair alone. Returns the first violation.
pub fn check(history: &[Op], keys: usize) -> Result<CheckStats, Box<Violation>> {
    let mut stats = CheckStats::default();
    for pair in 0..keys.div_ceil(2) {
        let ops: Vec<Op> = history.iter().filter(|o| pair_of(o.key).0 == pair).cloned().collect();
        match check_key(&ops) {
            KeyVerdict::Linearizable => {}
            KeyVerdict::TooLarge => stats.inconclusive_keys += 1,
            KeyVerdict::Violation(i) => {
                let b = ops[i].clone();
                let end = b.ret_ns.unwrap_or(u64::MAX);
                let concurrent = ops
                    .iter()
                    .filter(|o| o.call_ns <= end && o.ret_ns.is_none_or(|r| r >= b.call_ns))
                    .filter(|o| o.call_ns != b.call_ns || o.client != b.client)
                    .take(MAX_REPORTED_CONCURRENT)
                    .cloned()
                    .collect();
                return Err(Box::new(Violation {
                    key: b.key,
                    blocked: b,
                    concurrent,
                }));
            }
        }
    }
    Ok(stats)
}

#[derive(Debug, Default)]
pub struct CheckStats {
    /// Pairs whose search hit [`MAX_CONFIGURATIONS_PER_KEY`].
    pub inconclusive_keys: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(client: usize, input: Input, output: Option<Output>, call: u64, ret: Option<u64>) -> Op {
        Op {
            client,
            key: 0,
            input,
            output,
            call_ns: call,
            ret_ns: ret,
        }
    }

    #[test]
    fn sequential_history_fits_the_model() {
        let h = vec![
            op(0, Input::Create, Some(Output::Done), 0, Some(1)),
            op(0, Input::Stat, Some(Output::Stat(Value::File(0o644))), 2, Some(3)),
            op(0, Input::Chmod(0o600), Some(Output::Done), 4, Some(5)),
            op(0, Input::Create, Some(Output::Exists), 6, Some(7)),
            op(0, Input::Delete, Some(Output::Deleted(true)), 8, Some(9)),
            op(0, Input::Delete, Some(Output::Deleted(false)), 10, Some(11)),
            op(0, Input::Chmod(0o600), Some(Output::FileNotFound), 12, Some(13)),
            op(0, Input::Mkdir, Some(Output::Done), 14, Some(15)),
            op(0, Input::Create, Some(Output::Exists), 16, Some(17)),
            op(0, Input::Stat, Some(Output::Stat(Value::Dir(0o755))), 18, Some(19)),
        ];
        assert_eq!(check_key(&h), KeyVerdict::Linearizable);
    }

    #[test]
    fn concurrent_calls_may_take_either_order() {
        // Two creates overlap: either may win, but exactly one.
        let h = vec![
            op(0, Input::Create, Some(Output::Exists), 0, Some(10)),
            op(1, Input::Create, Some(Output::Done), 5, Some(15)),
        ];
        assert_eq!(check_key(&h), KeyVerdict::Linearizable);
        let both = vec![
            op(0, Input::Create, Some(Output::Done), 0, Some(10)),
            op(1, Input::Create, Some(Output::Done), 5, Some(15)),
        ];
        assert!(matches!(check_key(&both), KeyVerdict::Violation(_)));
    }

    #[test]
    fn a_stale_read_is_a_violation() {
        // The chmod completed before the read began; the read saw the old mode.
        let h = vec![
            op(0, Input::Create, Some(Output::Done), 0, Some(1)),
            op(0, Input::Chmod(0o600), Some(Output::Done), 2, Some(3)),
            op(1, Input::Stat, Some(Output::Stat(Value::File(0o644))), 4, Some(5)),
        ];
        assert_eq!(check_key(&h), KeyVerdict::Violation(2));
    }

    #[test]
    fn an_acknowledged_write_that_is_lost_is_a_violation() {
        let h = vec![
            op(0, Input::Create, Some(Output::Done), 0, Some(1)),
            op(1, Input::Stat, Some(Output::Stat(Value::Absent)), 100, Some(101)),
        ];
        assert!(matches!(check_key(&h), KeyVerdict::Violation(_)));
    }

    #[test]
    fn an_op_applied_twice_is_a_violation() {
        // A create retried and applied again answers "exists" to its own client.
        let h = vec![op(0, Input::Create, Some(Output::Exists), 0, Some(1))];
        assert!(matches!(check_key(&h), KeyVerdict::Violation(_)));
        let d = vec![
            op(0, Input::Create, Some(Output::Done), 0, Some(1)),
            op(0, Input::Delete, Some(Output::Deleted(false)), 2, Some(3)),
        ];
        assert!(matches!(check_key(&d), KeyVerdict::Violation(_)));
    }

    #[test]
    fn unknown_outcomes_may_or_may_not_have_happened() {
        // A create that timed out, later seen by a read: it happened.
        let seen = vec![
            op(0, Input::Create, None, 0, None),
            op(1, Input::Stat, Some(Output::Stat(Value::File(0o644))), 50, Some(51)),
        ];
        assert_eq!(check_key(&seen), KeyVerdict::Linearizable);
        // Or never seen: it did not.
        let unseen = vec![
            op(0, Input::Create, None, 0, None),
            op(1, Input::Stat, Some(Output::Stat(Value::Absent)), 50, Some(51)),
        ];
        assert_eq!(check_key(&unseen), KeyVerdict::Linearizable);
        // But not before it was called.
        let early = vec![
            op(1, Input::Stat, Some(Output::Stat(Value::File(0o644))), 0, Some(1)),
            op(0, Input::Create, None, 5, None),
        ];
        assert!(matches!(check_key(&early), KeyVerdict::Violation(_)));
    }

    fn on(key: usize, o: Op) -> Op {
        Op { key, ..o }
    }

    #[test]
    fn renames_move_between_the_paths_of_a_pair() {
        let h = vec![
            op(0, Input::Create, Some(Output::Done), 0, Some(1)),
            op(0, Input::Rename, Some(Output::Done), 2, Some(3)),
            op(0, Input::Stat, Some(Output::Stat(Value::Absent)), 4, Some(5)),
            on(
                1,
                op(0, Input::Stat, Some(Output::Stat(Value::File(0o644))), 6, Some(7)),
            ),
            // Back, then the source is gone and the destination taken.
            on(1, op(0, Input::Rename, Some(Output::Done), 8, Some(9))),
            on(1, op(0, Input::Rename, Some(Output::FileNotFound), 10, Some(11))),
            op(0, Input::Mkdir, Some(Output::Exists), 12, Some(13)),
            on(1, op(0, Input::Mkdir, Some(Output::Done), 14, Some(15))),
            op(0, Input::Rename, Some(Output::Exists), 16, Some(17)),
        ];
        assert_eq!(check_key(&h), KeyVerdict::Linearizable);
    }

    #[test]
    fn a_rename_applied_twice_is_a_violation() {
        // Retried after a failover and run again instead of answered from
        // the retry table: the source is gone, so its own client gets
        // FileNotFound for a rename that (once) succeeded.
        let h = vec![
            op(0, Input::Create, Some(Output::Done), 0, Some(1)),
            op(0, Input::Rename, Some(Output::FileNotFound), 2, Some(3)),
        ];
        assert!(matches!(check_key(&h), KeyVerdict::Violation(_)));
        // With a concurrent rename back, FileNotFound fits again.
        let fits = vec![
            op(0, Input::Create, Some(Output::Done), 0, Some(1)),
            op(0, Input::Rename, Some(Output::Done), 2, Some(10)),
            on(1, op(1, Input::Rename, Some(Output::Done), 3, Some(9))),
            op(2, Input::Rename, Some(Output::FileNotFound), 4, Some(8)),
        ];
        assert_eq!(check_key(&fits), KeyVerdict::Linearizable);
    }

    #[test]
    fn pairs_are_checked_apart() {
        // Key 2 is pair 1's first path: its create does not make key 0 exist.
        let h = vec![
            on(2, op(0, Input::Create, Some(Output::Done), 0, Some(1))),
            op(1, Input::Stat, Some(Output::Stat(Value::Absent)), 2, Some(3)),
        ];
        assert!(check(&h, 4).is_ok());
        let bad = vec![
            on(2, op(0, Input::Create, Some(Output::Done), 0, Some(1))),
            on(2, op(1, Input::Stat, Some(Output::Stat(Value::Absent)), 2, Some(3))),
        ];
        assert!(check(&bad, 4).is_err());
    }

    #[test]
    fn an_unexpected_error_is_a_violation() {
        let h = vec![op(
            0,
            Input::Mkdir,
            Some(Output::Other("AccessControl".into())),
            0,
            Some(1),
        )];
        assert!(matches!(check_key(&h), KeyVerdict::Violation(_)));
    }

    #[test]
    fn many_concurrent_clients_check_quickly() {
        // 16 clients, 400 overlapping calls each on one path: the memo keeps it small.
        let mut h = Vec::new();
        let mut state = Value::Absent;
        let mut t = 0u64;
        for i in 0..6400usize {
            let input = match i % 5 {
                0 => Input::Create,
                1 => Input::Chmod((i % 512) as u16),
                2 => Input::Stat,
                3 => Input::Delete,
                _ => Input::Mkdir,
            };
            // Apply sequentially at t, but record wide overlapping windows.
            let next = step(state, input, None).unwrap();
            let out = match (input, state) {
                (Input::Create, Value::Absent) | (Input::Mkdir, Value::Absent | Value::Dir(_)) => Output::Done,
                (Input::Create, _) | (Input::Mkdir, _) => Output::Exists,
                (Input::Delete, s) => Output::Deleted(s != Value::Absent),
                (Input::Chmod(_), Value::Absent) => Output::FileNotFound,
                (Input::Chmod(_), _) => Output::Done,
                (Input::Stat, s) => Output::Stat(s),
                (Input::Rename, _) => unreachable!("this history has no renames"),
            };
            state = next;
            h.push(op(i % 16, input, Some(out), t.saturating_sub(40), Some(t + 40)));
            t += 10;
        }
        let started = std::time::Instant::now();
        assert_eq!(check_key(&h), KeyVerdict::Linearizable);
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }
}
