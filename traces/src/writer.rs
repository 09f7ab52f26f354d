//! Writes a history one flushed line at a time, so that whatever happens to the run the
//! file holds every event recorded before it.

use std::io::{self, Write};
use std::sync::Mutex;

use crate::format::{Event, Header};

/// A history being written. Safe to share between client tasks: each event is one
/// `write` of a whole line followed by a flush, under a lock.
pub struct HistoryWriter<W: Write + Send> {
    out: Mutex<W>,
}

impl<W: Write + Send> HistoryWriter<W> {
    /// Starts a history: writes and flushes the header line.
    pub fn new(mut out: W, header: &Header) -> io::Result<Self> {
        write_line(&mut out, header)?;
        Ok(HistoryWriter {
            out: Mutex::new(out),
        })
    }

    /// Appends one event and flushes it.
    pub fn record(&self, event: &Event) -> io::Result<()> {
        let mut out = self
            .out
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        write_line(&mut *out, event)
    }

    /// Gives back the sink.
    pub fn into_inner(self) -> W {
        self.out
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn write_line<W: Write, T: serde::Serialize>(out: &mut W, value: &T) -> io::Result<()> {
    let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}
