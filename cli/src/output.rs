//! What zkr prints on stdout: text lines or JSON lines, flushed line by line (so `observe` and
//! `watch` stream), and a reader that went away (`zkr watch … | head -1`) ends zkr quietly.

use std::io::{self, Write};

use serde_json::Value;

use crate::exit::Failure;

/// Lines to stdout.
pub struct Printer {
    out: io::Stdout,
}

impl Printer {
    pub fn new() -> Printer {
        Printer { out: io::stdout() }
    }

    pub fn line(&mut self, text: &str) -> io::Result<()> {
        let mut out = self.out.lock();
        writeln!(out, "{text}")?;
        out.flush()
    }

    pub fn json(&mut self, value: &Value) -> io::Result<()> {
        self.line(&value.to_string())
    }
}

/// A failed write to stdout: a closed pipe ends zkr quietly with 0, like a reader that has
/// seen enough; anything else is reported.
pub fn write_failure(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Failure::quiet(crate::exit::OK)
    } else {
        Failure::usage(format!("cannot write to stdout: {e}"))
    }
}
