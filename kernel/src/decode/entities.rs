//! Decoders for State, Event, Evidence and Result.

use crate::decode::reader::{DecodeError, ObjectReader, Path, identity, list, string, vocabulary};
use crate::json::Value;
use crate::live::AcceptedRecord;
use crate::model::event::{EVENT_SCHEMA, EVIDENCE_SCHEMA};
use crate::model::outcome::RESULT_SCHEMA;
use crate::model::state::STATE_SCHEMA;
use crate::model::{
    Accepted, AcceptedEvent, Attempt, AttemptStatus, CancellationScope, Control, ControlReason,
    ControlStatus, Dependency, ErrorCode, Event, EventKind, Evidence, NoOp, Open, Outcome,
    Rejected, Requirement, State, StateBody, Suspension, SuspensionStatus, TaskStatus, Variant,
    WakeReason, WorkItem, WorkItemStatus,
};

macro_rules! closed {
    ($reader:expr, $key:literal, $vocabulary:ty) => {
        vocabulary(
            $reader.required($key)?,
            &$reader.path().key($key),
            <$vocabulary>::from_wire,
            <$vocabulary>::NAME,
        )
    };
}

/// Decodes a State (`valp-kernel-state.v1`).
pub fn decode_state(value: &Value) -> Result<State, DecodeError> {
    state_at(value, &Path::Root("state"))
}

/// Decodes an Event (`valp-kernel-event.v1`).
pub fn decode_event(value: &Value) -> Result<Event, DecodeError> {
    event_at(value, &Path::Root("event"))
}

/// Decodes one Evidence reference (`valp-kernel-evidence.v1`).
pub fn decode_evidence(value: &Value) -> Result<Evidence, DecodeError> {
    evidence_at(value, &Path::Root("evidence"))
}

/// Decodes an EvidenceSet (an array of Evidence, in any order).
pub fn decode_evidence_set(value: &Value) -> Result<Vec<Evidence>, DecodeError> {
    list(value, &Path::Root("evidence_set"), evidence_at)
}

/// Decodes a Result (`valp-kernel-result.v1`) of any variant.
pub fn decode_outcome(value: &Value) -> Result<Outcome, DecodeError> {
    outcome_at(value, &Path::Root("result"))
}

pub(crate) fn state_at(value: &Value, path: &Path<'_>) -> Result<State, DecodeError> {
    let mut state = ObjectReader::new(value, path)?;
    let accepted_events = state.required_list("accepted_events", accepted_event_at)?;
    let body = body_members(&mut state)?;
    state.finish()?;
    Ok(State {
        body,
        accepted_events,
    })
}

fn body_members(state: &mut ObjectReader<'_, '_>) -> Result<StateBody, DecodeError> {
    let path = state.path();
    state.schema(STATE_SCHEMA)?;
    let status = string(state.required("status")?, &path.key("status"))?;
    Ok(StateBody {
        protocol_version: state.string("protocol_version")?,
        installation_id: state.identity("installation_id")?,
        leader_epoch: state.int("leader_epoch")?,
        task_id: state.identity("task_id")?,
        revision: state.int("revision")?,
        status: Open::<TaskStatus>::from_wire(status),
        work_items: state.list("work_items", work_item_at)?,
        suspension: state
            .optional("suspension")
            .map(|value| suspension_at(value, &path.key("suspension")))
            .transpose()?,
        control: state
            .optional("control")
            .map(|value| control_at(value, &path.key("control")))
            .transpose()?,
    })
}

pub(crate) fn accepted_event_at(
    value: &Value,
    path: &Path<'_>,
) -> Result<AcceptedEvent, DecodeError> {
    let mut entry = ObjectReader::new(value, path)?;
    let decoded = AcceptedEvent {
        event_id: entry.identity("event_id")?,
        result_id: entry.identity("result_id")?,
        input_digest: entry.string("input_digest")?,
        result_digest: entry.string("result_digest")?,
    };
    entry.finish()?;
    Ok(decoded)
}

fn work_item_at(value: &Value, path: &Path<'_>) -> Result<WorkItem, DecodeError> {
    let mut item = ObjectReader::new(value, path)?;
    let decoded = WorkItem {
        task_id: item.identity("task_id")?,
        work_item_id: item.identity("work_item_id")?,
        requirement: closed!(item, "requirement", Requirement)?,
        status: closed!(item, "status", WorkItemStatus)?,
        dependencies: item.required_list("dependencies", dependency_at)?,
        current_attempt: item
            .nullable("current_attempt")?
            .map(|v| attempt_at(v, &path.key("current_attempt")))
            .transpose()?,
    };
    item.finish()?;
    Ok(decoded)
}

fn dependency_at(value: &Value, path: &Path<'_>) -> Result<Dependency, DecodeError> {
    let mut dependency = ObjectReader::new(value, path)?;
    let decoded = Dependency {
        work_item_id: dependency.identity("work_item_id")?,
        requirement: closed!(dependency, "requirement", Requirement)?,
    };
    dependency.finish()?;
    Ok(decoded)
}

fn attempt_at(value: &Value, path: &Path<'_>) -> Result<Attempt, DecodeError> {
    let mut attempt = ObjectReader::new(value, path)?;
    let decoded = Attempt {
        task_id: attempt.identity("task_id")?,
        work_item_id: attempt.identity("work_item_id")?,
        attempt_id: attempt.identity("attempt_id")?,
        dispatch_id: attempt.identity("dispatch_id")?,
        dispatch_generation: attempt.int("dispatch_generation")?,
        status: closed!(attempt, "status", AttemptStatus)?,
    };
    attempt.finish()?;
    Ok(decoded)
}

fn suspension_at(value: &Value, path: &Path<'_>) -> Result<Suspension, DecodeError> {
    let mut suspension = ObjectReader::new(value, path)?;
    let wake_reason = suspension
        .optional("wake_reason")
        .map(|v| {
            vocabulary(
                v,
                &path.key("wake_reason"),
                WakeReason::from_wire,
                WakeReason::NAME,
            )
        })
        .transpose()?;
    let decoded = Suspension {
        task_id: suspension.identity("task_id")?,
        suspension_id: suspension.identity("suspension_id")?,
        suspension_epoch: suspension.int("suspension_epoch")?,
        status: closed!(suspension, "status", SuspensionStatus)?,
        wait_policy_id: suspension.identity("wait_policy_id")?,
        wait_policy_digest: suspension.string("wait_policy_digest")?,
        required_work_item_ids: suspension.required_list("required_work_item_ids", identity)?,
        accepted_wake_id: suspension.optional_identity("accepted_wake_id")?,
        wake_reason,
    };
    suspension.finish()?;
    Ok(decoded)
}

fn control_at(value: &Value, path: &Path<'_>) -> Result<Control, DecodeError> {
    let mut control = ObjectReader::new(value, path)?;
    let decoded = Control {
        intent_version: control.int("intent_version")?,
        status: closed!(control, "status", ControlStatus)?,
        active_interrupt_id: control.optional_identity("active_interrupt_id")?,
    };
    control.finish()?;
    Ok(decoded)
}

fn open_slot<T>(
    reader: &mut ObjectReader<'_, '_>,
    key: &'static str,
    parse: fn(&str) -> Open<T>,
) -> Result<Option<Open<T>>, DecodeError> {
    let path = reader.path().key(key);
    reader
        .optional(key)
        .map(|value| string(value, &path).map(parse))
        .transpose()
}

pub(crate) fn event_at(value: &Value, path: &Path<'_>) -> Result<Event, DecodeError> {
    let mut event = ObjectReader::new(value, path)?;
    event.schema(EVENT_SCHEMA)?;
    let kind = string(event.required("kind")?, &path.key("kind"))?;
    let decoded = Event {
        event_id: event.identity("event_id")?,
        installation_id: event.identity("installation_id")?,
        leader_epoch: event.int("leader_epoch")?,
        task_id: event.identity("task_id")?,
        kind: Open::<EventKind>::from_wire(kind),
        expected_revision: event.int("expected_revision")?,
        work_item_id: event.optional_identity("work_item_id")?,
        attempt_id: event.optional_identity("attempt_id")?,
        dispatch_id: event.optional_identity("dispatch_id")?,
        dispatch_generation: event.optional_int("dispatch_generation")?,
        suspension_id: event.optional_identity("suspension_id")?,
        suspension_epoch: event.optional_int("suspension_epoch")?,
        wait_policy_id: event.optional_identity("wait_policy_id")?,
        wait_policy_digest: event.optional_string("wait_policy_digest")?,
        required_work_item_ids: event.list("required_work_item_ids", identity)?,
        wake_id: event.optional_identity("wake_id")?,
        wake_reason: open_slot(&mut event, "wake_reason", Open::<WakeReason>::from_wire)?,
        authority_principal_id: event.optional_identity("authority_principal_id")?,
        authority_evidence_id: event.optional_identity("authority_evidence_id")?,
        control_reason: open_slot(
            &mut event,
            "control_reason",
            Open::<ControlReason>::from_wire,
        )?,
        cancellation_scope: open_slot(
            &mut event,
            "cancellation_scope",
            Open::<CancellationScope>::from_wire,
        )?,
        interrupt_id: event.optional_identity("interrupt_id")?,
        redirect_id: event.optional_identity("redirect_id")?,
        intent_version: event.optional_int("intent_version")?,
        next_intent_version: event.optional_int("next_intent_version")?,
        superseded_work_item_ids: event.list("superseded_work_item_ids", identity)?,
    };
    event.finish()?;
    Ok(decoded)
}

pub(crate) fn evidence_at(value: &Value, path: &Path<'_>) -> Result<Evidence, DecodeError> {
    let mut evidence = ObjectReader::new(value, path)?;
    evidence.schema(EVIDENCE_SCHEMA)?;
    let decoded = Evidence {
        evidence_id: evidence.identity("evidence_id")?,
        content_digest: evidence.string("content_digest")?,
    };
    evidence.finish()?;
    Ok(decoded)
}

fn strings(value: &Value, path: &Path<'_>) -> Result<String, DecodeError> {
    string(value, path).map(str::to_owned)
}

pub(crate) fn outcome_at(value: &Value, path: &Path<'_>) -> Result<Outcome, DecodeError> {
    let mut result = ObjectReader::new(value, path)?;
    result.schema(RESULT_SCHEMA)?;
    let variant = closed!(result, "variant", Variant)?;
    let state = state_at(result.required("state")?, &path.key("state"))?;
    let input_digest = result.string("input_digest")?;
    let outcome = match variant {
        Variant::Accepted => Outcome::Accepted(Accepted {
            result_id: result.identity("result_id")?,
            state,
            input_digest,
            result_digest: result.string("result_digest")?,
            obligations: result.required_list("obligations", strings)?,
            audit_facts: result.required_list("audit_facts", strings)?,
        }),
        Variant::NoOp => Outcome::NoOp(NoOp {
            state,
            input_digest,
            prior_result_id: result.identity("prior_result_id")?,
            prior_result_digest: result.string("prior_result_digest")?,
        }),
        Variant::Rejected => Outcome::Rejected(Rejected {
            state,
            input_digest,
            error_code: closed!(result, "error_code", ErrorCode)?,
            prior_result_id: result.optional_identity("prior_result_id")?,
            prior_result_digest: result.optional_string("prior_result_digest")?,
        }),
    };
    result.finish()?;
    Ok(outcome)
}

/// An accepted Result without its State (the `result` of a compact entry).
pub(crate) fn record_at(value: &Value, path: &Path<'_>) -> Result<AcceptedRecord, DecodeError> {
    let mut result = ObjectReader::new(value, path)?;
    let record = AcceptedRecord {
        result_id: result.identity("result_id")?,
        input_digest: result.string("input_digest")?,
        result_digest: result.string("result_digest")?,
        obligations: result.required_list("obligations", strings)?,
        audit_facts: result.required_list("audit_facts", strings)?,
    };
    result.finish()?;
    Ok(record)
}
