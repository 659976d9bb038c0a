//! Reading a journal ahead: while the calling thread applies lines in order (head anchor, guard,
//! kernel, watch), a second thread reads the next ones, checks their canonical bytes, seq,
//! chain and entry digest, and decodes their entries ([`next_decoded`]).
//!
//! **Contract.** The applying side sees exactly the sequence [`next_decoded`] would give it on
//! the same reader, in order, ending at the first error (which is passed on as the item where
//! it happened, never earlier) or at the end: lines read ahead are applied only in order and
//! never after an error. The two sides share nothing but a bounded channel of batches of at
//! most [`BATCH`] lines ([`IN_FLIGHT`] batches queued) and a channel of spent batches going
//! back, which the reader empties (dropping their lines on the thread that allocated them) and
//! fills again, one for each it sends: about `(IN_FLIGHT + 4) * BATCH` lines are held, ~2 KB
//! each at 20 work items (the decoded line and its buffers), ~1 MB. The applying side is lent each line where it lies in its batch
//! ([`Lines`]). When the applying side stops (an error, or a salvage that keeps the damage), it
//! drops the channel and the reader stops at its next batch. The reader is handed back when it
//! has reached the end, for what follows the lines (the tail).
//!
//! **When.** Only when at least [`MIN_BYTES`] are left to read (an open of a long journal, a
//! refresh after a large bulk append): starting the thread, handing the lines over and the
//! wake-ups cost more than they save on short runs (measured: up to ~1,000 lines at 20 work
//! items reading ahead was slower on this shared machine), so the refreshes of a live console
//! or driver read on the calling thread. A verify that also checks the digests aside pays from
//! far fewer lines ([`digest_checks`](super::digest_checks)'s `MIN_BYTES`).

use std::cell::Cell;
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

use super::{Decoded, next_decoded};
use crate::chain::ChainReader;
use crate::error::StoreError;
use crate::machine::Machine;

/// Lines per batch (the first batch is [`FIRST_BATCH`], so the applying side starts early).
pub(crate) const BATCH: usize = 64;
/// Lines in the first batch.
const FIRST_BATCH: usize = 8;
/// Batches queued between the two threads.
const IN_FLIGHT: usize = 4;
/// Bytes left to read from which lines are read ahead on a second thread, ~1,000 lines at 20
/// work items (measured with `cargo bench -p valp-store --bench verify -- read_ahead`, see
/// ARCHITECTURE.md).
pub(crate) const MIN_BYTES: u64 = 1 << 20;

thread_local! {
    /// [`set_read_ahead_threshold`] for this thread.
    static THRESHOLD: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Sets, for the calling thread only, how many bytes must be left to read for a journal's
/// lines to be read ahead on a second thread (`None`: the default, [`MIN_BYTES`]; `Some(0)`:
/// always; `Some(u64::MAX)`: never). For tests and benchmarks that compare the two ways; what a
/// journal gives is the same either way.
#[doc(hidden)]
pub fn set_read_ahead_threshold(bytes: Option<u64>) {
    THRESHOLD.with(|threshold| threshold.set(bytes));
}

/// Whether reading `left` more bytes pays for a second thread, when it pays from `from` bytes
/// ([`MIN_BYTES`], or less when the digests are also checked aside).
pub(crate) fn pays(left: u64, from: u64) -> bool {
    left >= THRESHOLD.with(Cell::get).unwrap_or(from)
}

/// The source of lines the applying side pulls from, each lent where it lies until the next
/// is asked for: a decoded line is ~1 KB (the entry's Event is inline), so it is not moved out
/// of its batch, and its batch goes back to the reading thread when spent (see [`read_ahead`]).
pub(crate) trait Lines<M: Machine> {
    /// The next line, `Ok(None)` at the end.
    fn next_line(&mut self) -> Result<Option<&Decoded<M>>, StoreError>;
}

/// Lines read in turn on the applying thread.
pub(crate) struct InTurn<'r, M: Machine> {
    reader: &'r mut ChainReader,
    line: Option<Decoded<M>>,
}

impl<'r, M: Machine> InTurn<'r, M> {
    pub(crate) fn new(reader: &'r mut ChainReader) -> Self {
        Self { reader, line: None }
    }
}

impl<M: Machine> Lines<M> for InTurn<'_, M> {
    fn next_line(&mut self) -> Result<Option<&Decoded<M>>, StoreError> {
        self.line = next_decoded::<M>(self.reader)?;
        Ok(self.line.as_ref())
    }
}

/// Runs `apply` with the lines of `reader` (of the journal file `path`), read ahead on a second
/// thread; gives what `apply` returned and the reader, back from that thread, positioned where
/// [`next_decoded`] stopped (the end, or the first error) when `apply` read to the end, or
/// wherever it got to when `apply` stopped first.
pub(crate) fn read_ahead<M: Machine, T>(
    path: &Path,
    reader: ChainReader,
    apply: impl FnOnce(&mut dyn Lines<M>) -> T,
) -> Result<(T, ChainReader), StoreError> {
    std::thread::scope(|scope| {
        let (sender, receiver) = sync_channel::<Batch<M>>(IN_FLIGHT);
        let (spent, returned) = channel::<Batch<M>>();
        let reading = std::thread::Builder::new()
            .name("journal-read-ahead".to_owned())
            .spawn_scoped(scope, move || read_into::<M>(reader, &sender, &returned))
            .map_err(|source| StoreError::io(path, "start a reading thread", source))?;
        let mut ahead = Ahead {
            receiver,
            spent,
            batch: Batch::default(),
            next: 0,
        };
        let applied = apply(&mut ahead);
        // Stops the reader at its next batch if `apply` stopped before the end.
        drop(ahead);
        let reader = reading.join().map_err(|_| {
            StoreError::Invalid(format!(
                "{}: the thread reading the journal ahead stopped unexpectedly",
                path.display()
            ))
        })?;
        Ok((applied, reader))
    })
}

/// Lines sent at once, in order, and the error where reading stopped after them, if it did.
/// A spent batch goes back to the reading thread, which drops its lines there (it allocated
/// their buffers: a free on the thread that allocated is the allocator's fast path, one from
/// another thread is not) and fills it again.
struct Batch<M: Machine> {
    lines: Vec<Decoded<M>>,
    error: Option<StoreError>,
}

impl<M: Machine> Default for Batch<M> {
    fn default() -> Self {
        Self {
            lines: Vec::new(),
            error: None,
        }
    }
}

/// The applying side of [`read_ahead`]: the batch whose lines it is lent, one by one.
struct Ahead<M: Machine> {
    receiver: Receiver<Batch<M>>,
    /// Where spent batches go back to the reading thread.
    spent: Sender<Batch<M>>,
    batch: Batch<M>,
    /// The batch's next line.
    next: usize,
}

impl<M: Machine> Lines<M> for Ahead<M> {
    fn next_line(&mut self) -> Result<Option<&Decoded<M>>, StoreError> {
        if self.next == self.batch.lines.len() {
            if let Some(error) = self.batch.error.take() {
                return Err(error);
            }
            match self.receiver.recv() {
                Ok(more) => {
                    // A reader that has stopped no longer takes the spent batch back.
                    let spent = std::mem::replace(&mut self.batch, more);
                    let _ = self.spent.send(spent);
                    self.next = 0;
                }
                // The reader has sent everything (or stopped: see the join above).
                Err(_) => return Ok(None),
            }
        }
        let index = self.next;
        self.next += 1;
        match self.batch.lines.get(index) {
            Some(line) => Ok(Some(line)),
            // A batch with no lines holds the error where reading stopped.
            None => self.batch.error.take().map_or(Ok(None), Err),
        }
    }
}

/// Reads lines into batches sent to `sender`, in order, until the end, the first error (sent
/// last) or the receiver is gone; gives the reader back. Spent batches handed back on
/// `returned` are emptied here and filled again.
fn read_into<M: Machine>(
    mut reader: ChainReader,
    sender: &SyncSender<Batch<M>>,
    returned: &Receiver<Batch<M>>,
) -> ChainReader {
    let mut size = FIRST_BATCH;
    let mut batch = Batch::<M> {
        lines: Vec::with_capacity(size),
        error: None,
    };
    loop {
        let last = match next_decoded::<M>(&mut reader) {
            Ok(Some(line)) => {
                batch.lines.push(line);
                false
            }
            Ok(None) => true,
            Err(error) => {
                batch.error = Some(error);
                true
            }
        };
        if last || batch.lines.len() >= size {
            size = BATCH;
            let mut empty = returned.try_recv().unwrap_or_default();
            empty.lines.clear();
            empty.lines.reserve(size);
            let full = std::mem::replace(&mut batch, empty);
            let any = !full.lines.is_empty() || full.error.is_some();
            if (any && sender.send(full).is_err()) || last {
                return reader;
            }
        }
    }
}
