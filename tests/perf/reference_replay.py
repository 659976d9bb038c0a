#!/usr/bin/env python3
"""Replays a reference-layout journal with the VALP reference kernel (not run in CI).

Usage: reference_replay.py REFERENCE_CHECKOUT KERNEL_DIR

REFERENCE_CHECKOUT is a checkout of the public VALP repository at commit
57d06a771a6c564a4517686a26c63570195a7373 (the folder holding `valp_cli/protocol_kernel.py`;
see tests/fixtures/conformance/PROVENANCE.md). Nothing of it is copied here. KERNEL_DIR holds
`genesis.json` and `replay.jsonl` as `valp export --reference` writes them.

The reference kernel takes typed values, not JSON, so this script reads each line with
`json.loads`, builds the reference's own dataclasses from it, and hands the entries to the
reference's `replay(GenesisRoot, entries)`, which re-runs `reduce` on every entry and compares
the canonical JSON of the recomputed Result (full State and history included) with the recorded
one. Prints the number of entries and the final State's revision; exits 1 if replay raises.
"""

import json
import sys
from pathlib import Path


def main() -> int:
    checkout, kernel_dir = Path(sys.argv[1]), Path(sys.argv[2])
    sys.path.insert(0, str(checkout))
    from valp_cli import protocol_kernel as k  # noqa: E402 (the reference, from its checkout)

    def ident(value):
        return None if value is None else k.Identity(k.IdentityKind(value["kind"]), value["value"])

    def idents(values):
        return tuple(ident(value) for value in values or ())

    def closed(enum, value):
        try:
            return enum(value)
        except ValueError:
            return value

    def attempt(value):
        if value is None:
            return None
        return k.Attempt(
            ident(value["task_id"]), ident(value["work_item_id"]), ident(value["attempt_id"]),
            ident(value["dispatch_id"]), value["dispatch_generation"],
            k.AttemptStatus(value["status"]),
        )

    def work_item(value):
        return k.WorkItem(
            ident(value["task_id"]), ident(value["work_item_id"]),
            k.WorkItemRequirement(value["requirement"]), k.WorkItemStatus(value["status"]),
            tuple(
                k.Dependency(ident(dep["work_item_id"]), k.WorkItemRequirement(dep["requirement"]))
                for dep in value["dependencies"]
            ),
            attempt(value.get("current_attempt")),
        )

    def suspension(value):
        if value is None:
            return None
        return k.Suspension(
            ident(value["task_id"]), ident(value["suspension_id"]), value["suspension_epoch"],
            k.SuspensionStatus(value["status"]), ident(value["wait_policy_id"]),
            value["wait_policy_digest"], idents(value["required_work_item_ids"]),
            ident(value.get("accepted_wake_id")),
            None if value.get("wake_reason") is None else k.WakeReason(value["wake_reason"]),
        )

    def control(value):
        if value is None:
            return None
        return k.ControlState(
            value["intent_version"], k.ControlStatus(value["status"]),
            ident(value.get("active_interrupt_id")),
        )

    def state(value):
        return k.State(
            protocol_version=value["protocol_version"],
            installation_id=ident(value["installation_id"]),
            leader_epoch=value["leader_epoch"],
            task_id=ident(value["task_id"]),
            revision=value["revision"],
            status=closed(k.TaskStatus, value["status"]),
            accepted_events=tuple(
                k.AcceptedEvent(
                    ident(item["event_id"]), ident(item["result_id"]),
                    item["input_digest"], item["result_digest"],
                )
                for item in value["accepted_events"]
            ),
            work_items=tuple(work_item(item) for item in value.get("work_items", ())),
            suspension=suspension(value.get("suspension")),
            control=control(value.get("control")),
        )

    def event(value):
        get = value.get
        return k.Event(
            event_id=ident(value["event_id"]),
            installation_id=ident(value["installation_id"]),
            leader_epoch=value["leader_epoch"],
            task_id=ident(value["task_id"]),
            kind=closed(k.EventKind, value["kind"]),
            expected_revision=value["expected_revision"],
            work_item_id=ident(get("work_item_id")),
            attempt_id=ident(get("attempt_id")),
            dispatch_id=ident(get("dispatch_id")),
            dispatch_generation=get("dispatch_generation"),
            suspension_id=ident(get("suspension_id")),
            suspension_epoch=get("suspension_epoch"),
            wait_policy_id=ident(get("wait_policy_id")),
            wait_policy_digest=get("wait_policy_digest"),
            required_work_item_ids=idents(get("required_work_item_ids")),
            wake_id=ident(get("wake_id")),
            wake_reason=None if get("wake_reason") is None else closed(k.WakeReason, get("wake_reason")),
            authority_principal_id=ident(get("authority_principal_id")),
            authority_evidence_id=ident(get("authority_evidence_id")),
            control_reason=None if get("control_reason") is None else closed(k.ControlReason, get("control_reason")),
            cancellation_scope=None if get("cancellation_scope") is None else closed(k.CancellationScope, get("cancellation_scope")),
            interrupt_id=ident(get("interrupt_id")),
            redirect_id=ident(get("redirect_id")),
            intent_version=get("intent_version"),
            next_intent_version=get("next_intent_version"),
            superseded_work_item_ids=idents(get("superseded_work_item_ids")),
        )

    def evidence(value):
        return k.Evidence(ident(value["evidence_id"]), value["content_digest"])

    def result(value):
        if value["variant"] != "accepted":
            # The reference refuses such an entry in replay; keep it refusable.
            return k.Result(rejected=k.Rejected(state(value["state"]), value["input_digest"], value.get("error_code", "")))
        return k.Result(accepted=k.Accepted(
            result_id=ident(value["result_id"]),
            state=state(value["state"]),
            input_digest=value["input_digest"],
            result_digest=value["result_digest"],
            obligations=tuple(value["obligations"]),
            audit_facts=tuple(value["audit_facts"]),
        ))

    def entries(path):
        with open(path, "rb") as lines:
            for line in lines:
                value = json.loads(line)
                yield k.ReplayEntry(
                    event(value["event"]),
                    tuple(evidence(item) for item in value["evidence_set"]),
                    result(value["result"]),
                )

    genesis = json.loads((kernel_dir / "genesis.json").read_bytes())
    root = k.GenesisRoot(state(genesis["state"]))
    try:
        replayed = k.replay(root, entries(kernel_dir / "replay.jsonl"))
    except ValueError as error:
        print(f"reference replay refused: {error}", file=sys.stderr)
        return 1
    print(f"reference replay: {len(replayed.applied_result_digests)} entries, "
          f"revision {replayed.state.revision}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
