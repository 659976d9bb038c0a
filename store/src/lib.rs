//! The valp control root on disk (RFC 0002 §5.2, State subdomain).
//!
//! **Contract.** Plain synchronous std code. Everything that becomes protocol truth goes through
//! the kernel: a journal stores only entries the kernel accepted, and opening a journal re-runs
//! the kernel over all of them before anything is shown. Writes are crash-safe: a journal
//! append is one line written and `fdatasync`ed under an exclusive lock; whole files are
//! written to a temporary file, synced, renamed into place and the directory synced. A crash at
//! any point leaves either the old or the new content, or a torn last journal line that the
//! next writer moves to `quarantine/` and cuts off. Every journal has a head anchor
//! ([`head`]) rewritten after each durable append, so a journal cut or rolled back is refused,
//! not trusted; only `valp recover` ([`recover`]) cuts complete lines, with backups. Nothing is
//! ever deleted silently. Every line carries the `recorded_at` of the injected [`clock`],
//! outside the kernel's digests. The control root's layout version is 3; [`upgrade`] converts
//! layouts 1 and 2.
//!
//! See [`layout`] for the folder structure, [`chain`] for the line format, [`journal`] for
//! open/verify/append, [`ledger`] for the chained files of records no kernel replays: the
//! task's effect ledger ([`effects`]), operator-action journal ([`actions`]) and
//! foreign-observation journal ([`foreign`]) (the same line format, lock and recovery), [`blobs`] for content-addressed evidence, [`done`] for the Done gate and
//! [`fence`] for the epoch fence the store enforces on task journals.

pub mod actions;
pub mod blobs;
pub mod chain;
pub mod clock;
pub mod done;
pub mod effects;
pub mod error;
pub mod fence;
mod files;
pub mod foreign;
pub mod head;
pub mod installation;
pub mod io;
pub mod journal;
pub mod layout;
pub mod ledger;
pub mod lock;
pub mod machine;
pub mod recover;
pub mod reference;
pub mod root;
pub mod snapshot;
mod snapshot_open;
pub mod upgrade;
pub mod verify;

pub use error::{StoreCode, StoreError};
pub use journal::{Access, Appended, Journal, Warning};
pub use root::ControlRoot;
