//! Fork safety for handles: a core object made in one process is not used or dropped in a
//! forked child.
//!
//! After `fork()` the child has none of the parent's runtime threads, so the parent's sessions
//! and recipes are dead there: using one would wait forever, and dropping one could run cleanup
//! against a session that belongs to the parent. A [`Local`] remembers the process that made its
//! value; in any other process it refuses to hand it out (`ClosedError`) and forgets it on drop.

use std::mem::ManuallyDrop;

use pyo3::prelude::*;

use crate::errors;

/// A value tied to the process that created it.
pub struct Local<T> {
    pid: u32,
    value: ManuallyDrop<T>,
}

impl<T> Local<T> {
    /// Wraps `value`, made in this process.
    pub fn new(value: T) -> Local<T> {
        Local {
            pid: zkrecipes::runtime::process_id(),
            value: ManuallyDrop::new(value),
        }
    }

    /// Whether this process made the value.
    pub fn is_here(&self) -> bool {
        self.pid == zkrecipes::runtime::process_id()
    }

    /// The value when in its own process.
    pub fn here(&self) -> Option<&T> {
        self.is_here().then(|| &*self.value)
    }

    /// The value, mutably, when in its own process.
    pub fn here_mut(&mut self) -> Option<&mut T> {
        if self.is_here() {
            Some(&mut self.value)
        } else {
            None
        }
    }

    /// The value, or `ClosedError` in a forked child.
    pub fn get(&self, py: Python<'_>, what: &str) -> PyResult<&T> {
        if self.is_here() {
            Ok(&self.value)
        } else {
            Err(errors::closed(
                py,
                format!(
                    "this {what} was made in process {} before a fork; make a new one in this process ({})",
                    self.pid,
                    zkrecipes::runtime::process_id()
                ),
            ))
        }
    }

    /// Takes the value out when in its own process.
    pub fn into_inner(mut self) -> Option<T> {
        if self.is_here() {
            // SAFETY: `self` is forgotten right after, so the value is taken exactly once.
            let v = unsafe { ManuallyDrop::take(&mut self.value) };
            std::mem::forget(self);
            Some(v)
        } else {
            None
        }
    }
}

impl<T> Drop for Local<T> {
    fn drop(&mut self) {
        if self.is_here() {
            // SAFETY: dropped once, here; the field is never used again.
            unsafe { ManuallyDrop::drop(&mut self.value) }
        }
        // In a forked child: forget it (its threads and session live in the parent only).
    }
}
