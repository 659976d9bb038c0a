//! Wall time for the console: the store's clock ([`valp_store::clock`]), which stamps every
//! journal line with its `recorded_at`, so the console and the store share one time type and
//! one injected clock. [`SystemClock`] is the only place that reads the wall clock; tests pass a
//! [`FixedClock`].

pub use valp_store::clock::{Clock, FixedClock, SystemClock, Timestamp};
