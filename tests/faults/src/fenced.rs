//! The resource a lock protects, fenced: the pattern of the README's section "Fencing: what a
//! lock cannot promise without it", as the fault suite's scenario 6 uses it.
//!
//! A lock cannot stop a holder that was paused (a long GC, SIGSTOP, a swapped-out VM) past its
//! session from waking up and writing: its last check said "held", and it has not looked again.
//! The resource can stop it. Every holder sends its fencing token (the lock node's czxid, which
//! grows with every new holder) with each write, and the resource accepts a write only if the
//! token is at least the highest it has seen. Once the next holder has written, the old one's
//! writes are refused, however late they arrive.

use std::sync::Mutex;
use std::time::Instant;

/// One write the store was asked for, in arrival order.
#[derive(Clone, Debug)]
pub struct Write {
    pub writer: String,
    pub token: i64,
    pub accepted: bool,
    pub at: Instant,
}

/// A value guarded by fencing tokens: `write` succeeds only with a token `>=` the highest seen.
#[derive(Debug, Default)]
pub struct FencedStore {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    highest: Option<i64>,
    log: Vec<Write>,
}

impl FencedStore {
    /// Applies a write by `writer` holding `token`; `Err(highest token seen)` if it is stale.
    /// The check and the update are one step (a row's `UPDATE .. WHERE fence <= $token`).
    pub fn write(&self, writer: &str, token: i64) -> Result<(), i64> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let accepted = match s.highest {
            Some(h) => token >= h,
            None => true,
        };
        if accepted {
            s.highest = Some(token);
        }
        s.log.push(Write {
            writer: writer.to_string(),
            token,
            accepted,
            at: Instant::now(),
        });
        match s.highest {
            Some(h) if !accepted => Err(h),
            _ => Ok(()),
        }
    }

    /// Every write so far, in arrival order.
    pub fn log(&self) -> Vec<Write> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .log
            .clone()
    }
}
