//! Reading the `[related]` section ([`Related`]) of a plan, with its rules (see
//! [`crate::plan::related`]); the work items it names are checked with the other cross
//! references.

use std::collections::BTreeMap;

use super::super::related::{AgentopsMapping, MapKey, Related};
use super::{Node, Reader, is_safe_relative};

const RELATED_KEYS: &[&str] = &["agentops", "agentops_watch"];
const MAPPING_KEYS: &[&str] = &["subject", "verdict", "work_item"];

impl Reader {
    pub(super) fn related(&mut self, node: &Node) -> Related {
        let mut related = Related::default();
        let Some(table) = self.table(node, "related", RELATED_KEYS) else {
            return related;
        };
        if let Some(node) = table.get("agentops_watch") {
            let field = table.field("agentops_watch");
            if let Some(path) = self.string(node, &field) {
                if is_safe_relative(&path) {
                    related.agentops_watch = Some(path);
                } else {
                    self.problem(
                        node.at,
                        &field,
                        format!("{path:?} is not a safe relative path"),
                    );
                }
            }
        }
        let mut seen: BTreeMap<MapKey, String> = BTreeMap::new();
        if let Some(node) = table.get("agentops") {
            for (item, path) in self.tables(node, &table.field("agentops")) {
                if let Some(mapping) = self.mapping(item, &path, &mut seen) {
                    related.agentops.push(mapping);
                }
            }
        }
        related
    }

    fn mapping(
        &mut self,
        node: &Node,
        path: &str,
        seen: &mut BTreeMap<MapKey, String>,
    ) -> Option<AgentopsMapping> {
        let table = self.table(node, path, MAPPING_KEYS)?;
        let work_item = table.get("work_item").and_then(|node| {
            let placed = self.id(node, &table.field("work_item"))?;
            self.places.related_items.push(Some(placed.clone()));
            Some(placed.value)
        });
        let key = match (table.get("subject"), table.get("verdict")) {
            (Some(node), None) => MapKey::Subject(self.digest(node, &table.field("subject"))?),
            (None, Some(node)) => MapKey::Verdict(self.digest(node, &table.field("verdict"))?),
            _ => {
                self.problem(table.at, path, "give exactly one of subject or verdict");
                return None;
            }
        };
        if let Some(first) = seen.get(&key) {
            self.problem(
                table.at,
                path,
                format!("that digest is already mapped at {first}"),
            );
            return None;
        }
        seen.insert(key.clone(), path.to_owned());
        Some(AgentopsMapping { key, work_item })
    }

    /// A bare AgentOps digest: 64 lowercase hex digits (`None` after a problem).
    fn digest(&mut self, node: &Node, field: &str) -> Option<String> {
        let text = self.string(node, field)?;
        if text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Some(text)
        } else {
            self.problem(
                node.at,
                field,
                "must be 64 lowercase hex digits (a bare AgentOps digest)",
            );
            None
        }
    }
}
