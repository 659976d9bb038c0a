//! Reading a journal ahead: while the calling thread applies lines in order (head anchor, guard,
//! kernel, watch), a second thread reads the next ones, checks their canonical bytes, seq,
//! chain and entry digest, and decodes their entries ([`next_decoded`]).
//!
//! **Contract.** The applying side sees exactly the sequence [`next_decoded`] would give it on
//! the same reader, in order, ending at the first error (which is passed on as the item where
//! it happened, never earlier) or at the end: lines read ahead are applied only in order and
//! never after an error. The two sides share nothing but a bounded channel of batches of at
//! most [`BATCH`] lines ([`IN_FLIGHT`] batches queued, so at most `(IN_FLIGHT + 2) * BATCH`
//! lines are held, ~0.4 MB at 20 work items); when the applying side stops (an error, or a
//! salvage that keeps the damage), it drops the channel and the reader stops at its next batch.
//! The reader is handed back when it has reached the end, for what follows the lines (the tail).
//!
//! **When.** Only when at least [`MIN_BYTES`] are left to read (an open of a long journal, a
//! refresh after a large bulk append): starting the thread, handing the lines over and the
//! wake-ups cost more than they save on short runs (measured: up to ~1,000 lines at 20 work
//! items reading ahead was slower on this shared machine), so the refreshes of a live console
//! or driver read on the calling thread. A verify that also checks the digests aside pays from
//! far fewer lines ([`digest_checks`](super::digest_checks)'s `MIN_BYTES`).

use std::cell::Cell;
use std::collections::VecDeque;
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};

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

/// The source of lines the applying side pulls from: the next line, `Ok(None)` at the end. It
/// is handed the line applied last (if any), to be dropped where it was made: the reading
/// thread allocated its buffers, and freeing them there is the allocator's fast path, where a
/// free from another thread is not (measured: see ARCHITECTURE.md, reader23).
pub(crate) type Lines<'a, M> =
    dyn FnMut(Option<Decoded<M>>) -> Result<Option<Decoded<M>>, StoreError> + 'a;

/// Runs `apply` with the lines of `reader` (of the journal file `path`), read ahead on a second
/// thread; gives what `apply` returned and the reader, back from that thread, positioned where
/// [`next_decoded`] stopped (the end, or the first error) when `apply` read to the end, or
/// wherever it got to when `apply` stopped first.
pub(crate) fn read_ahead<M: Machine, T>(
    path: &Path,
    reader: ChainReader,
    apply: impl FnOnce(&mut Lines<'_, M>) -> T,
) -> Result<(T, ChainReader), StoreError> {
    std::thread::scope(|scope| {
        let (sender, receiver) = sync_channel::<Batch<M>>(IN_FLIGHT);
        let (give_back, given_back) = channel::<Batch<M>>();
        let reading = std::thread::Builder::new()
            .name("journal-read-ahead".to_owned())
            .spawn_scoped(scope, move || read_into::<M>(reader, &sender, &given_back))
            .map_err(|source| StoreError::io(path, "start a reading thread", source))?;
        let mut batch = Batch::<M>::new();
        // The lines applied since the last batch came, and the batch to gather the next ones in.
        let mut spent = Batch::<M>::new();
        let mut next = |applied: Option<Decoded<M>>| {
            spent.extend(applied.map(Ok));
            loop {
                if let Some(item) = batch.pop_front() {
                    return item.map(Some);
                }
                match receiver.recv() {
                    Ok(more) => {
                        // The spent lines go back to be dropped by the reader; the emptied batch
                        // gathers the next ones. A reader that has stopped no longer takes them.
                        let emptied = std::mem::replace(&mut batch, more);
                        let _ = give_back.send(std::mem::replace(&mut spent, emptied));
                    }
                    // The reader has sent everything (or stopped: see the join below).
                    Err(_) => return Ok(None),
                }
            }
        };
        let applied = apply(&mut next);
        // Stops the reader at its next batch if `apply` stopped before the end.
        drop(receiver);
        let reader = reading.join().map_err(|_| {
            StoreError::Invalid(format!(
                "{}: the thread reading the journal ahead stopped unexpectedly",
                path.display()
            ))
        })?;
        Ok((applied, reader))
    })
}

/// A line as the reading thread passes it on, or the error where reading stopped.
type Item<M> = Result<Decoded<M>, StoreError>;

/// The lines sent at once, in order; and the spent lines handed back, in the same container.
type Batch<M> = VecDeque<Item<M>>;

/// Reads lines into batches sent to `sender`, in order, until the end, the first error (sent
/// as the last item) or the receiver is gone; gives the reader back. Batches of spent lines
/// handed back on `given_back` are emptied here (their lines dropped on this thread) and reused.
fn read_into<M: Machine>(
    mut reader: ChainReader,
    sender: &SyncSender<Batch<M>>,
    given_back: &Receiver<Batch<M>>,
) -> ChainReader {
    let mut size = FIRST_BATCH;
    let mut batch = Batch::<M>::with_capacity(size);
    loop {
        let item = next_decoded::<M>(&mut reader).transpose();
        let last = !matches!(item, Some(Ok(_)));
        batch.extend(item);
        if last || batch.len() >= size {
            size = BATCH;
            let mut empty = given_back.try_recv().unwrap_or_default();
            empty.clear();
            empty.reserve(size);
            let full = std::mem::replace(&mut batch, empty);
            if (!full.is_empty() && sender.send(full).is_err()) || last {
                return reader;
            }
        }
    }
}
