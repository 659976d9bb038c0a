//! The installation State as a ledger replays and extends it.

use crate::installation::model::{
    InstallationEntry, InstallationEvent, InstallationGenesis, InstallationState,
};
use crate::installation::reduce::reduce_installation;
use crate::live::{AcceptedRecord, Verdict};
use crate::model::{Evidence, InstallationStatus, Int, Outcome};
use crate::replay::{ReplayError, record_mismatch};

/// The authority State, advanced one event at a time. The ledger is short (selections, reopens,
/// rotations), so this applies the pure reducer directly.
#[derive(Debug, Clone)]
pub struct InstallationLive {
    state: InstallationState,
}

impl InstallationLive {
    /// Starts from a ledger's genesis: the uninitialized state of the installation.
    pub fn from_genesis(genesis: &InstallationGenesis) -> Result<Self, ReplayError> {
        let state = &genesis.state;
        let uninitialized = state.status.known() == Some(InstallationStatus::Uninitialized)
            && state.revision == 0
            && state.accepted_events.is_empty()
            && state.active_epoch == 0
            && state.highest_epoch == 0
            && state.observation.is_none()
            && state.leader.is_none()
            && state.fenced.is_empty()
            && state.pending.is_none()
            && state.reopened.is_none()
            && state.handoffs.is_empty()
            && *state == InstallationState::genesis(state.installation_id.clone());
        if !uninitialized {
            return Err(ReplayError::GenesisInvalid);
        }
        Ok(Self {
            state: state.clone(),
        })
    }

    /// The current State.
    pub fn state(&self) -> &InstallationState {
        &self.state
    }

    /// The current revision.
    pub fn revision(&self) -> Int {
        self.state.revision
    }

    /// Proposes an event; the State advances only when it is accepted.
    pub fn apply(&mut self, event: &InstallationEvent, evidence_set: &[Evidence]) -> Verdict {
        match reduce_installation(&self.state, event, evidence_set) {
            Outcome::Accepted(accepted) => {
                let record = accepted.record();
                self.state = accepted.state;
                Verdict::Accepted(record)
            }
            Outcome::NoOp(no_op) => Verdict::NoOp {
                input_digest: no_op.input_digest,
                prior_result_id: no_op.prior_result_id,
                prior_result_digest: no_op.prior_result_digest,
            },
            Outcome::Rejected(rejected) => Verdict::Rejected {
                input_digest: rejected.input_digest,
                error_code: rejected.error_code,
                prior: rejected.prior_result_id.zip(rejected.prior_result_digest),
            },
        }
    }

    /// Applies a recorded ledger entry with replay semantics: the recomputed Result must be
    /// accepted and equal to the recorded one (the error names the first field that is not).
    /// On error the State is unchanged.
    pub fn apply_recorded(
        &mut self,
        entry: &InstallationEntry,
    ) -> Result<AcceptedRecord, ReplayError> {
        let index = usize::try_from(self.state.revision).unwrap_or(usize::MAX);
        match reduce_installation(&self.state, &entry.event, &entry.evidence_set) {
            Outcome::Accepted(accepted) => {
                let record = accepted.record();
                if let Some(field) = record_mismatch(&record, &entry.result) {
                    return Err(ReplayError::Mismatch { index, field });
                }
                self.state = accepted.state;
                Ok(record)
            }
            Outcome::NoOp(_) => Err(ReplayError::NotReproduced {
                index,
                verdict: "no_op".to_owned(),
            }),
            Outcome::Rejected(rejected) => Err(ReplayError::NotReproduced {
                index,
                verdict: rejected.error_code.as_str().to_owned(),
            }),
        }
    }
}
