//! Related loops: read-only readers of other loop systems' on-disk artifacts.
//!
//! Each submodule reads one foreign system's files as untrusted input and reports what they
//! say, tagged with their origin and how far each could be verified. Nothing here writes into
//! the foreign system's folders, runs its tools or takes its locks, and nothing here proposes a
//! kernel event: a foreign verdict is evidence the Leader can look at, not a VALP review.
//! What they read is kept in a task only through [`record`] (the task's foreign-observation
//! journal and the blob store), and a SuperLoop Work Plan becomes a task only through the
//! ordinary plan publication ([`superloop::import()`]).
//! The formats and the "never infer" rules are in `docs/related-loops.md` of the shared notes
//! (summarised in ARCHITECTURE.md, section "Related loops").

pub mod agentops;
pub mod record;
pub mod superloop;
pub mod watch;
