//! The canonical JSON of a plan (`valp-plan.v1`) and of its Done policy
//! (`valp-kernel-done-policy.v3`, with `[dimensions]` when the plan has them), and the strict
//! reader of a published plan.

use std::collections::BTreeMap;

use valp_kernel::canonical::{Canonical, decode_canonical};
use valp_kernel::json::write::{Fields, write_str};

use super::check::{self, Raw};
use super::dimensions::Dimensions;
use super::tree;
use super::{
    Adapter, Criterion, DoneSettings, Execution, PLAN_SCHEMA, Plan, PlanDependency, PlanErrors,
    PlanItem, PlanProblem, Run, TmuxPane, Verification, Workdir,
};

fn write_int(fields: &mut Fields<'_>, key: &'static str, value: u32) {
    fields.int(key, i128::from(value));
}

impl Canonical for Plan {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.list("criteria", &self.criteria);
        fields.optional("dimensions", self.dimensions.as_ref());
        fields.canonical("done", &self.done);
        fields.canonical("execution", &self.execution);
        fields.str("goal", &self.goal);
        fields.strs("non_goals", &self.non_goals);
        fields.optional("related", self.related.as_ref());
        fields.str("schema_version", PLAN_SCHEMA);
        fields.str("task_id", &self.task_id);
        fields.list("verification", &self.verification);
        fields.list("work_items", &self.work_items);
        fields.end();
    }
}

impl Canonical for Criterion {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("description", &self.description);
        fields.str("id", &self.id);
        fields.bool("not_applicable_allowed", self.not_applicable_allowed);
        fields.bool("required", self.required);
        if let Some(verify) = &self.verify {
            fields.strs("verify", verify);
        }
        fields.end();
    }
}

impl Canonical for PlanItem {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.list("dependencies", &self.dependencies);
        if let Some(description) = &self.description {
            fields.str("description", description);
        }
        fields.strs("expected_evidence", &self.expected_evidence);
        fields.str("id", &self.id);
        fields.str("requirement", self.requirement.as_str());
        fields.canonical("run", &self.run);
        fields.end();
    }
}

impl Canonical for PlanDependency {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("id", &self.id);
        fields.str("kind", self.kind.as_str());
        fields.end();
    }
}

impl Canonical for Run {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("adapter", self.adapter.as_str());
        match self.adapter {
            Adapter::Process | Adapter::AgentStream => {
                if let Some(stream) = &self.stream {
                    fields.str("agent", stream.agent.as_str());
                }
                fields.strs("argv", &self.argv);
                fields.str("cwd", &self.cwd);
                if !self.env.is_empty() {
                    write_env(fields.key("env"), &self.env);
                }
                if let Some(prompt) = self.stream.as_ref().and_then(|s| s.prompt.as_ref()) {
                    fields.str("prompt", prompt);
                }
                write_int(&mut fields, "timeout_seconds", self.timeout_seconds);
            }
            // No command: the members a process run needs are not part of an external one
            // (the reader refuses them), so they are not written.
            Adapter::External => fields.str("cwd", &self.cwd),
            Adapter::Tmux => {
                // A refused plan never reaches here, so a tmux run always has its members.
                if let Some(tmux) = &self.tmux {
                    fields.str("agent", &tmux.agent);
                    if let TmuxPane::Command(argv) = &tmux.pane {
                        fields.strs("command", argv);
                    }
                    fields.str("cwd", &self.cwd);
                    fields.str("prompt", &tmux.prompt);
                    if let Some(socket) = &tmux.socket {
                        fields.str("socket", socket);
                    }
                    if let TmuxPane::Target(pane) = &tmux.pane {
                        fields.str("target", pane);
                    }
                }
                write_int(&mut fields, "timeout_seconds", self.timeout_seconds);
                // Written only when not the default, so plans without it keep their digest.
                if let Some(tmux) = self
                    .tmux
                    .as_ref()
                    .filter(|tmux| tmux.workdir != Workdir::Shared)
                {
                    fields.str("workdir", tmux.workdir.as_str());
                }
            }
        }
        fields.end();
    }
}

/// An object of variable names: a `BTreeMap<String, _>` iterates in byte order, which is the
/// canonical key order.
fn write_env(out: &mut Vec<u8>, env: &BTreeMap<String, String>) {
    out.push(b'{');
    for (index, (name, value)) in env.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_str(out, name);
        out.push(b':');
        write_str(out, value);
    }
    out.push(b'}');
}

impl Canonical for Verification {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.strs("argv", &self.argv);
        fields.str("cwd", &self.cwd);
        fields.str("id", &self.id);
        write_int(&mut fields, "timeout_seconds", self.timeout_seconds);
        fields.end();
    }
}

impl Canonical for DoneSettings {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.strs("degradable_soft_items", &self.degradable_soft_items);
        fields.bool("skippable_optional_items", self.skippable_optional_items);
        fields.end();
    }
}

impl Canonical for Dimensions {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.canonical("cost", &self.gates.cost);
        fields.canonical("experience", &self.gates.experience);
        fields.canonical("quality", &self.gates.quality);
        fields.canonical("stability", &self.gates.stability);
        write_int(&mut fields, "version", self.version);
        fields.end();
    }
}

impl Canonical for Execution {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        // Written only when required, so the plans published before the field existed keep
        // their bytes and digests.
        if self.approval_required {
            fields.str("approval", "required");
        }
        write_int(&mut fields, "max_concurrency", self.max_concurrency);
        write_int(&mut fields, "retry_budget", self.retry_budget);
        fields.end();
    }
}

/// Reads a published plan: canonical JSON of a valid plan whose re-encoding is the same bytes.
pub(super) fn decode(origin: &str, bytes: &[u8]) -> Result<Plan, PlanErrors> {
    let refuse = |field: &str, rule: String| PlanErrors {
        problems: vec![PlanProblem {
            file: origin.to_owned(),
            line: 1,
            column: 1,
            field: field.to_owned(),
            rule,
        }],
    };
    let value = decode_canonical(bytes)
        .map_err(|error| refuse("(file)", format!("not canonical JSON: {error}")))?;
    let (plan, problems) = check::read(&tree::from_json(&value));
    if !problems.is_empty() {
        return Err(PlanErrors {
            problems: problems
                .into_iter()
                .map(|Raw { field, rule, .. }| PlanProblem {
                    file: origin.to_owned(),
                    line: 1,
                    column: 1,
                    field,
                    rule,
                })
                .collect(),
        });
    }
    let encoded = plan.canonical_bytes();
    if encoded != bytes {
        let offset = valp_kernel::canonical::first_difference(&encoded, bytes);
        return Err(refuse(
            "(file)",
            format!(
                "not the canonical form of the plan it holds (first difference at byte \
                 {offset}: a default left out, or an empty optional member written)"
            ),
        ));
    }
    Ok(plan)
}
