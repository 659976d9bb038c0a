//! Test support: a control root in a temporary folder holding one task `t` of a seeded walk
//! (no entries yet), the setup the Activity history and the task rows are tested on.

use std::sync::Arc;

use valp_kernel::walk::{Walk, WalkConfig};
use valp_kernel::{Identity, IdentityKind};
use valp_store::io::OsStorage;
use valp_store::{ControlRoot, Journal};

/// The root, the walk to take steps from, and the task's writing handle.
pub(super) struct WalkRoot {
    /// Keeps the folder while the test runs.
    pub _temp: tempfile::TempDir,
    pub root: ControlRoot,
    pub walk: Walk,
    pub journal: Journal,
}

/// A root whose task `t` (epoch 1) follows the walk of `seed` over `work_items` items.
pub(super) fn walk_root(seed: u64, work_items: usize) -> WalkRoot {
    let temp = tempfile::tempdir().expect("a temporary folder");
    let root = ControlRoot::init(
        temp.path(),
        Identity::new(IdentityKind::Installation, "inst").expect("an id"),
        Arc::new(OsStorage),
    )
    .expect("a control root");
    let task = Identity::new(IdentityKind::Task, "t").expect("an id");
    let config = WalkConfig {
        seed,
        work_items,
        may_terminate: false,
    };
    let walk = Walk::for_task_at(config, root.installation().installation_id.clone(), 1, task);
    let journal = root.create_task(walk.genesis()).expect("the task journal");
    WalkRoot {
        _temp: temp,
        root,
        walk,
        journal,
    }
}
