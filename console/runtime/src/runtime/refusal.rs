//! Refusals in words: when the kernel refuses a Leader's operation, the sentence shown (in the
//! console and by the CLI) names the rule and the task's current state, with the kernel's text
//! for why (`kernel::explain`, the transition lister of the flow views), instead of "the kernel
//! refused the event in the current state".
//!
//! The lister judges one candidate per event kind and target from the current State with the
//! reducer's own code; the refused operation's event has the same kind and target, so the
//! candidate's refusal (same code) is this one's. A refusal the lister does not reproduce (a
//! stale revision, a duplicate) keeps the store's words.

use valp_kernel::explain::{self, Guards, Judgement, Target};
use valp_kernel::live::LiveState;
use valp_kernel::{ControlStatus, Event};

/// `event`'s refusal with `code` explained from `live` (the State it was judged against) at
/// the installation's `active_epoch`: `<kind> needs <rule>; the task is <status>: <why>`.
pub fn explain_refusal(
    live: &LiveState,
    event: &Event,
    active_epoch: i128,
    code: &str,
) -> Option<String> {
    let kind = event.kind.known()?;
    let item = event.work_item_id.as_ref();
    let guards = Guards {
        active_epoch: Some(active_epoch),
        ..Guards::default()
    };
    let reasons = explain::explain(live, &guards)
        .into_iter()
        .filter(|transition| transition.kind == kind)
        .filter(|transition| match (&transition.target, item) {
            (Target::Task, None) => true,
            (
                Target::WorkItem(target)
                | Target::Attempt {
                    work_item: target, ..
                },
                Some(item),
            ) => target == item,
            _ => false,
        })
        .find_map(|transition| match transition.judgement {
            Judgement::Refused {
                code: refused,
                reasons,
            } if refused == code => Some(reasons),
            _ => None,
        })?;
    let body = live.body();
    let interrupted = body
        .control
        .as_ref()
        .is_some_and(|control| control.status == ControlStatus::Interrupted);
    Some(format!(
        "{} needs {}; the task is {}{}: {}",
        kind.as_str(),
        explain::guard(kind),
        body.status.as_str(),
        if interrupted { " (interrupted)" } else { "" },
        reasons.join("; ")
    ))
}
