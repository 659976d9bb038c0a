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
//! State digest. Given a run of checks at once ([`DigestChain::check_all`]) it hashes all
//! their body passes side by side, sixteen at a time where the CPU has AVX-512.
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
    state_digest_of_tail, state_digest_rest, write_result_preimage,
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
    /// The history midstate of the State the chain has reached (whose body is `tail`) until a
    /// check computes that State's digest: the chain's own thread pays the body pass, not the
    /// applying thread that started it, and a run of checks leaves its last one owed.
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
        self.check_all(std::iter::once(check))
    }

    /// [`check`](Self::check) of each of `checks` in order, until one fails (its error), with
    /// every body pass of the run hashed at once ([`valp_sha256_pair::digest_many`]: sixteen
    /// side by side where the CPU can). In a verify nothing of one State digest waits for
    /// another: each hashes a history midstate that holds the *recorded* result digests, over
    /// its own copy of the tail (one per entry but the last). So the State digests come first
    /// (the one the chain owes, then each entry's but the last), then every result digest,
    /// which binds the State digest before its entry. The last entry's State digest is left
    /// owed, as a new chain's is: the next check (or [`state_digest`](Self::state_digest)) pays
    /// it, and a verifier's next batch starts its own chain instead.
    pub fn check_all<'c>(
        &mut self,
        checks: impl IntoIterator<Item = &'c DigestCheck>,
    ) -> Result<(), ReplayError> {
        let checks: Vec<&DigestCheck> = checks.into_iter().filter(|check| check.filled).collect();
        let Some(&last) = checks.last() else {
            return Ok(());
        };
        let owed = self.owed.take();
        // The tails the State digests hash, and the histories they follow.
        let mut tails = Vec::with_capacity(checks.len());
        let mut histories = Vec::with_capacity(checks.len());
        if let Some(history) = &owed {
            tails.push(self.tail.bytes().to_vec());
            histories.push(history);
        }
        for (n, check) in checks.iter().enumerate() {
            self.tail.take_changes(&check.changes);
            if n + 1 < checks.len() {
                tails.push(self.tail.bytes().to_vec());
                histories.push(&check.history);
            }
        }
        let state_pieces: Vec<[&[u8]; 4]> = histories
            .iter()
            .zip(&tails)
            .map(|(history, tail)| state_digest_rest(history, tail))
            .collect();
        let state_messages: Vec<Message<'_>> = histories
            .iter()
            .zip(&state_pieces)
            .map(|(history, pieces)| {
                let (words, blocks, _) = history.words();
                Message::new(words, blocks, pieces)
            })
            .collect();
        let mut digests = Vec::with_capacity(checks.len());
        valp_sha256_pair::digest_many(&state_messages, &mut digests);
        // The State digest before each entry, as the result digest's preimage holds it.
        let mut priors: Vec<String> = digests.iter().map(digest_text).collect();
        if owed.is_none() {
            priors.insert(0, std::mem::take(&mut self.prior));
        }
        // Each entry's tail after its changes: its own copy, the last the chain's.
        let skip = usize::from(owed.is_some());
        let bodies = tails.iter().skip(skip).map(Vec::as_slice);
        let bodies = bodies.chain(std::iter::once(self.tail.bytes()));
        // Preimages up to the first without room for the prior digest (never in a check the
        // kernel filled): that entry fails if every one before it passes.
        let result_pieces: Vec<[&[u8]; 5]> = checks
            .iter()
            .zip(&priors)
            .zip(bodies)
            .map_while(|((check, prior), body)| check.result_pieces(prior, body))
            .collect();
        let result_messages: Vec<Message<'_>> = result_pieces
            .iter()
            .map(|pieces| Message::new(valp_sha256_pair::INITIAL, 0, pieces))
            .collect();
        valp_sha256_pair::digest_many(&result_messages, &mut digests);
        for (n, check) in checks.iter().enumerate() {
            if digests
                .get(n)
                .is_none_or(|result| check.recorded != Some(*result))
            {
                self.prior = priors.swap_remove(n);
                return Err(ReplayError::Mismatch {
                    index: check.index,
                    field: MismatchField::ResultDigest,
                });
            }
        }
        self.owed = Some(last.history.clone());
        Ok(())
    }
}

impl DigestCheck {
    /// The result digest of this check's entry, applied to a State whose digest is `prior` and
    /// whose encoded tail, `tail`, has taken the entry's changes; `None` when the preimage has
    /// no room for the prior digest (never in a check the kernel filled).
    pub(super) fn result_digest(&self, prior: &str, tail: &TailCopy) -> Option<[u8; 32]> {
        let mut hasher = Sha256::new();
        for piece in self.result_pieces(prior, tail.bytes())? {
            Update::update(&mut hasher, piece);
        }
        Some(hasher.finalize().into())
    }
}

impl DigestCheck {
    /// The result digest's preimage in pieces, with `prior` (the State digest before the entry)
    /// and `body` (the encoded tail after it); `None` when the preimage has no room for the
    /// prior digest.
    fn result_pieces<'p>(&'p self, prior: &'p str, body: &'p [u8]) -> Option<[&'p [u8]; 5]> {
        let at = self.shape.prior_at;
        let before = self.preimage.get(..at)?;
        let after = self.preimage.get(at + DIGEST_LEN..)?;
        let body: &[u8] = if self.shape.body_follows { body } else { &[] };
        Some([before, prior.as_bytes(), after, body, RESULT_DIGEST_SUFFIX])
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
