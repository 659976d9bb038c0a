//! Applying a recorded entry now and checking its digests later: the two SHA-256 passes over
//! the next State body (its result digest and its State digest, the protocol's floor) need
//! nothing but bytes, so a verifier may run them elsewhere (another thread) while it applies
//! the next entries.
//!
//! [`LiveState::apply_recorded_deferring`] runs every check of
//! [`apply_recorded`](LiveState::apply_recorded) but the result digest's: it takes the recorded
//! result digest as the history record's (chaining on it) and writes into a [`DigestCheck`] the
//! result digest's preimage (with room for the prior State digest), what the entry changed in the
//! next body's encoded tail (its head and the replaced work items, not the ~8 KB tail: copying
//! it took the applying thread's time) and the history midstate after the entry. A
//! [`DigestChain`], started from the State the entries are applied to
//! ([`LiveState::digest_chain`], which copies its encoded tail once) and given the checks **in
//! entry order**, brings its copy of the tail (one run of bytes, on its own thread: see
//! [`TailCopy`]) in line with each check's changes, computes the result digest with the State
//! digest the previous check left, compares it with the recorded one, and computes the next
//! State digest.
//!
//! **Contract.** For every entry sequence, applying with `apply_recorded_deferring` and
//! checking in order gives exactly what `apply_recorded` gives, entry by entry: the first
//! failure, from either side, is the inline path's error (same index, same
//! [`MismatchField`]), and after entries that all pass, the same live state. Within one entry
//! the inline path compares `result_id`, `input_digest`, `result_digest`, `obligations`,
//! `audit_facts` in that order: when the applying side fails on `obligations` or `audit_facts`,
//! it still fills the check (which goes first: a wrong result digest is that entry's error);
//! when it fails earlier it does not. The applying side chains on recorded digests, so after a
//! check fails its later answers mean nothing: the caller takes the earliest failure and drops
//! the state. Pure: no threads here; running checks on another thread is the caller's choice.

use sha2::digest::Update;
use sha2::{Digest as _, Sha256};
use valp_sha256_pair::Message;

use super::LiveState;
use super::midstate::Midstate;
use crate::canonical::{DIGEST_LEN, digest_text, raw_digest};
use crate::decode::InputPrefix;
use crate::reduce::digests::{
    BodyChanges, RESULT_DIGEST_SUFFIX, ResultBinding, ResultPreimage, TailCopy,
    state_digest_of_tail, write_result_preimage,
};
use crate::replay::{CompactEntry, MismatchField, ReplayError, record_mismatch, reproduced};

/// Stands for the prior State digest in a deferred preimage: a digest's length, so that the
/// check puts the real one in its place. Also an owed result digest's stand-in until it is paid
/// ([`owed`](super::owed)): no SHA-256 is all zeros.
pub(super) const PRIOR_PLACEHOLDER: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// The digest work of one applied entry, left for a [`DigestChain`] (or, for a proposal applied
/// owing its digests, a [`DigestRun`](super::DigestRun)); buffers are reused when a check is
/// filled again.
#[derive(Debug, Clone, Default)]
pub struct DigestCheck {
    /// The entry's index (its revision before it), for the error.
    pub(super) index: usize,
    /// Whether the entry was applied and this holds its check.
    pub(super) filled: bool,
    /// The recorded result digest; `None` when it is not a digest's text (never equal).
    recorded: Option<[u8; 32]>,
    /// The result digest's preimage up to the body tail (or whole but its suffix).
    preimage: Vec<u8>,
    shape: ResultPreimage,
    /// What the entry changed in the State body's encoded tail.
    pub(super) changes: BodyChanges,
    /// The history midstate after the entry (with its recorded result digest).
    history: Midstate,
}

impl DigestCheck {
    /// Whether the last [`LiveState::apply_recorded_deferring`] given this check filled it (to be
    /// given to the chain next).
    pub fn is_filled(&self) -> bool {
        self.filled
    }

    /// The index of the entry this check is of.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Takes what the result digest binds (called by the commit in place of hashing it).
    pub(super) fn take_result(&mut self, binding: &ResultBinding<'_>) {
        self.shape = write_result_preimage(binding, &mut self.preimage);
        binding
            .next_encoding
            .write_changes(binding.changed_items, &mut self.changes);
    }
}

/// Runs [`DigestCheck`]s in entry order, carrying the State digest from one to the next.
#[derive(Debug, Clone)]
pub struct DigestChain {
    /// The State digest before the next check's entry, once `owed` is paid.
    prior: String,
    /// The history midstate of the State the chain started from (whose body is `tail`) until
    /// the chain's first check computes that State's digest: the chain's own thread pays the
    /// body pass, not the applying thread that started it.
    owed: Option<Midstate>,
    /// The State body's encoded tail before the next check's entry.
    tail: TailCopy,
}

impl DigestChain {
    /// The State digest the chain has reached (after the last check that passed).
    pub fn state_digest(&self) -> String {
        match &self.owed {
            Some(history) => state_digest_of_tail(history, self.tail.bytes()),
            None => self.prior.clone(),
        }
    }

    /// Checks one entry's result digest against the recorded one and moves on to its State
    /// digest; the error is the one the inline path gives for that entry. An unfilled check
    /// passes (nothing was applied).
    pub fn check(&mut self, check: &DigestCheck) -> Result<(), ReplayError> {
        if !check.filled {
            return Ok(());
        }
        if let Some(history) = self.owed.take() {
            self.prior = state_digest_of_tail(&history, self.tail.bytes());
        }
        self.tail.take_changes(&check.changes);
        let digests = check.result_and_state_digests(&self.prior, &self.tail);
        match digests {
            Some((result, next)) if check.recorded == Some(result) => {
                self.prior = digest_text(&next);
                Ok(())
            }
            _ => Err(ReplayError::Mismatch {
                index: check.index,
                field: MismatchField::ResultDigest,
            }),
        }
    }
}

impl DigestCheck {
    /// The result digest of this check's entry, applied to a State whose digest is `prior` and
    /// whose encoded tail, `tail`, has taken the entry's changes; `None` when the preimage has
    /// no room for the prior digest (never in a check the kernel filled).
    pub(super) fn result_digest(&self, prior: &str, tail: &TailCopy) -> Option<[u8; 32]> {
        let at = self.shape.prior_at;
        let before = self.preimage.get(..at)?;
        let after = self.preimage.get(at + DIGEST_LEN..)?;
        let mut hasher = Sha256::new();
        Update::update(&mut hasher, before);
        Update::update(&mut hasher, prior.as_bytes());
        Update::update(&mut hasher, after);
        if self.shape.body_follows {
            Update::update(&mut hasher, tail.bytes());
        }
        Update::update(&mut hasher, RESULT_DIGEST_SUFFIX);
        Some(hasher.finalize().into())
    }
}

impl DigestCheck {
    /// [`result_digest`](Self::result_digest) and the State digest after the entry (raw), the
    /// two passes over the body hashed side by side ([`valp_sha256_pair`]): in a verify the
    /// history midstate after the entry holds the recorded result digest, so the State digest
    /// does not wait for the result digest.
    fn result_and_state_digests(
        &self,
        prior: &str,
        tail: &TailCopy,
    ) -> Option<([u8; 32], [u8; 32])> {
        let at = self.shape.prior_at;
        let before = self.preimage.get(..at)?;
        let after = self.preimage.get(at + DIGEST_LEN..)?;
        let body: &[u8] = if self.shape.body_follows {
            tail.bytes()
        } else {
            &[]
        };
        let result: [&[u8]; 5] = [before, prior.as_bytes(), after, body, RESULT_DIGEST_SUFFIX];
        let (words, blocks, pending) = self.history.words();
        let state: [&[u8]; 4] = [pending, b"]", tail.bytes(), b"\n"];
        Some(valp_sha256_pair::digest_pair(
            &Message::new(valp_sha256_pair::INITIAL, 0, &result),
            &Message::new(words, blocks, &state),
        ))
    }
}

impl LiveState {
    /// A chain to check the entries applied from this State on
    /// ([`apply_recorded_deferring`](Self::apply_recorded_deferring)); costs a copy of the
    /// encoded body here, and the chain one State digest before its first check.
    pub fn digest_chain(&self) -> DigestChain {
        DigestChain {
            prior: String::new(),
            owed: Some(self.history.prefix.clone()),
            tail: TailCopy::new(&self.encoding),
        }
    }

    /// [`apply_recorded_from`](Self::apply_recorded_from) without the result digest's
    /// comparison and the State digest: those are written into `check`, for a [`DigestChain`]
    /// to run in entry order (see the module's contract). On error the live state must be
    /// discarded, and when `check` is still filled it is that entry's first check.
    pub fn apply_recorded_deferring(
        &mut self,
        entry: &CompactEntry,
        prefix: Option<InputPrefix<'_>>,
        check: &mut DigestCheck,
    ) -> Result<(), ReplayError> {
        check.filled = false;
        let index = usize::try_from(self.revision()).unwrap_or(usize::MAX);
        let recorded = entry.result.result_digest.as_str();
        let verdict = self.apply_checking(
            &entry.event,
            &entry.evidence_set,
            prefix,
            Some((&mut *check, recorded)),
        );
        let record = reproduced(index, verdict)?;
        let field = record_mismatch(&record, &entry.result);
        // Compared before the result digest: that entry's error whatever its digest.
        if let Some(field @ (MismatchField::ResultId | MismatchField::InputDigest)) = field {
            return Err(ReplayError::Mismatch { index, field });
        }
        check.index = index;
        check.recorded = raw_digest(recorded);
        check.history.clone_from(&self.history.prefix);
        check.filled = true;
        match field {
            None => Ok(()),
            Some(field) => Err(ReplayError::Mismatch { index, field }),
        }
    }
}
