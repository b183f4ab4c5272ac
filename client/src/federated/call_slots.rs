//! [`CallSlots`]: a bound on the calls in flight to one nameservice (see
//! [`Nameservices`](super::Nameservices)), taken and given back without a
//! lock.
//!
//! Why not tokio's `Semaphore`: its release locks the list of waiters on
//! every call, also when nobody waits, and a forwarded call takes and
//! gives back a slot every time. Here the common case (a slot is free)
//! takes one compare-and-swap to take a slot and one subtraction and one
//! load to give it back. Waiting (every slot taken) is the rare case: a
//! waiter registers in `waiting`, and each slot given back while anyone
//! waits wakes one waiter.
//!
//! Guarantees: at most `limit` slots are held at once. A waiter is woken
//! by the first slot given back after it found none (no lost wake-up: it
//! registers, arms its wake-up, then looks again; a giver subtracts, then
//! looks for waiters; both in one sequentially consistent order, so one of
//! the two sees the other). A waiter gives up at its deadline.
//!
//! Caveat: not fair. A caller that arrives as a slot is given back may
//! take it before the waiter woken for it, which then waits again (within
//! its deadline); under a steady overload some waiters time out while
//! newcomers get through.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use tokio::sync::Notify;

/// A bounded set of call slots (see the module docs).
#[derive(Debug)]
pub struct CallSlots {
    limit: usize,
    taken: AtomicUsize,
    waiting: AtomicUsize,
    given_back: Notify,
}

/// One taken slot, given back when dropped.
#[derive(Debug)]
pub struct CallSlot<'s>(&'s CallSlots);

impl Drop for CallSlot<'_> {
    fn drop(&mut self) {
        self.0.give_back();
    }
}

impl CallSlots {
    /// At most `limit` slots taken at once (at least one).
    pub fn new(limit: usize) -> CallSlots {
        assert!(limit > 0, "a nameservice needs at least one call slot");
        CallSlots {
            limit,
            taken: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            given_back: Notify::new(),
        }
    }

    /// A free slot, if there is one now.
    pub fn try_take(&self) -> Option<CallSlot<'_>> {
        let mut taken = self.taken.load(SeqCst);
        while taken < self.limit {
            match self.taken.compare_exchange_weak(taken, taken + 1, SeqCst, SeqCst) {
                Ok(_) => return Some(CallSlot(self)),
                Err(now) => taken = now,
            }
        }
        None
    }

    /// A slot, waiting at most `wait` for one to be given back (a free
    /// one is taken without arming a timer).
    pub async fn take(&self, wait: Duration) -> Option<CallSlot<'_>> {
        if let Some(slot) = self.try_take() {
            return Some(slot);
        }
        self.waiting.fetch_add(1, SeqCst);
        let slot = tokio::time::timeout(wait, async {
            loop {
                let given_back = self.given_back.notified();
                tokio::pin!(given_back);
                // Armed before looking again: a slot given back from here
                // on wakes this waiter (or stores the wake-up for it).
                given_back.as_mut().enable();
                if let Some(slot) = self.try_take() {
                    return slot;
                }
                given_back.await;
            }
        })
        .await
        .ok();
        self.waiting.fetch_sub(1, SeqCst);
        slot
    }

    /// Slots taken now.
    pub fn taken(&self) -> usize {
        self.taken.load(SeqCst)
    }

    fn give_back(&self) {
        let before = self.taken.fetch_sub(1, SeqCst);
        assert!(before > 0, "a call slot was given back that was not taken");
        if self.waiting.load(SeqCst) > 0 {
            self.given_back.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn no_more_than_the_limit_are_taken() {
        let slots = CallSlots::new(2);
        let a = slots.try_take().expect("the first slot");
        let b = slots.try_take().expect("the second slot");
        assert!(slots.try_take().is_none(), "a third slot was taken of two");
        assert_eq!(slots.taken(), 2);
        drop(a);
        assert_eq!(slots.taken(), 1);
        let c = slots.try_take().expect("the slot given back");
        drop((b, c));
        assert_eq!(slots.taken(), 0);
    }

    #[tokio::test]
    async fn a_waiter_gets_the_slot_given_back_and_gives_up_at_its_deadline() {
        let slots = Arc::new(CallSlots::new(1));
        let held = slots.try_take().expect("the only slot");
        let started = tokio::time::Instant::now();
        assert!(
            slots.take(Duration::from_millis(50)).await.is_none(),
            "a slot was taken while the only one was held"
        );
        assert!(
            started.elapsed() >= Duration::from_millis(50),
            "gave up before its deadline"
        );
        let waiter = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.take(Duration::from_secs(10)).await.is_some() })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(held);
        let got = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("the waiter was not woken by the slot given back")
            .expect("the waiter ran");
        assert!(got, "the waiter did not get the slot given back");
        assert_eq!(slots.taken(), 0);
    }

    /// Many callers on two threads contend for few slots: never more than
    /// the limit in flight, and every caller gets one (a lost wake-up
    /// would leave a caller waiting out its 10 s deadline and fail).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contending_callers_stay_within_the_limit_and_all_get_through() {
        const LIMIT: usize = 3;
        const CALLERS: usize = 64;
        const ROUNDS: usize = 200;
        let slots = Arc::new(CallSlots::new(LIMIT));
        let most = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..CALLERS)
            .map(|_| {
                let (slots, most) = (slots.clone(), most.clone());
                tokio::spawn(async move {
                    for _ in 0..ROUNDS {
                        let slot = slots.take(Duration::from_secs(10)).await.expect("no slot within 10 s");
                        most.fetch_max(slots.taken(), SeqCst);
                        tokio::task::yield_now().await;
                        drop(slot);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("a caller failed");
        }
        assert!(
            most.load(SeqCst) <= LIMIT,
            "{} slots were taken of {LIMIT}",
            most.load(SeqCst)
        );
        assert_eq!(slots.taken(), 0, "slots were not all given back");
    }
}
