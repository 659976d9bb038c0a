//! A folder's entry names, listed again only when the folder may have changed.
//!
//! A supervisor looks at its `control/` folder every poll (20 ms). Listing it opens the folder,
//! and every open is an inotify event for whoever watches the control root: the console's
//! watcher woke ~150 times a second for three idle supervisors. A `stat` is no event, so
//! [`Listing::names`] compares the folder's modification time (and inode) with the listing it
//! keeps and lists again only when they differ, or while the kept listing is too close to that
//! time to be trusted: a file added in the same clock tick as the listing leaves the time
//! unchanged, so a listing counts only once it was taken [`SETTLED`] after the folder's last
//! change.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long after the folder's last change a listing must be taken to be kept: more than the
/// coarsest modification-time granularity of the file systems in use (1 s), with a margin.
pub const SETTLED: Duration = Duration::from_secs(2);

/// What identifies one state of the folder: device, inode and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    device: u64,
    inode: u64,
    modified: SystemTime,
}

impl Stamp {
    fn of(metadata: &Metadata) -> Option<Self> {
        Some(Self {
            device: metadata.dev(),
            inode: metadata.ino(),
            modified: metadata.modified().ok()?,
        })
    }
}

/// The entry names of one folder, kept while the folder is unchanged.
#[derive(Debug)]
pub struct Listing {
    dir: PathBuf,
    /// The last names listed, with the folder's stamp if that listing was taken [`SETTLED`]
    /// after the folder's last change (`None`: list again next time).
    kept: Option<(Option<Stamp>, Vec<String>)>,
    /// How many times the folder was listed.
    #[cfg(test)]
    listed: usize,
}

impl Listing {
    /// The listing of `dir` (nothing read yet).
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            kept: None,
            #[cfg(test)]
            listed: 0,
        }
    }

    /// The folder's entry names (unsorted; lossy UTF-8), or `None` when it cannot be read.
    pub fn names(&mut self) -> Option<&[String]> {
        let stamp = std::fs::metadata(&self.dir)
            .ok()
            .as_ref()
            .and_then(Stamp::of);
        let fresh = matches!(
            (&self.kept, stamp),
            (Some((Some(kept), _)), Some(now)) if *kept == now
        );
        if !fresh {
            self.kept = None;
            let started = SystemTime::now();
            let names = self.list()?;
            // The stamp was read before the listing: a change between the two moves the next
            // stamp, so keeping the names under it never hides that change.
            let settled = stamp.filter(|stamp| {
                started
                    .duration_since(stamp.modified)
                    .is_ok_and(|age| age >= SETTLED)
            });
            self.kept = Some((settled, names));
        }
        self.kept.as_ref().map(|(_, names)| names.as_slice())
    }

    /// How many times the folder was read.
    #[cfg(test)]
    pub fn listed(&self) -> usize {
        self.listed
    }

    fn list(&mut self) -> Option<Vec<String>> {
        #[cfg(test)]
        {
            self.listed += 1;
        }
        let entries = std::fs::read_dir(&self.dir).ok()?;
        Some(
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::fs::{File, FileTimes};

    use super::*;

    fn age(dir: &Path, by: Duration) {
        let at = SystemTime::now() - by;
        File::open(dir)
            .unwrap()
            .set_times(FileTimes::new().set_modified(at))
            .unwrap();
    }

    fn sorted(listing: &mut Listing) -> Vec<String> {
        let mut names = listing.names().unwrap().to_vec();
        names.sort();
        names
    }

    #[test]
    fn an_unchanged_settled_folder_is_listed_once() {
        let temp = tempfile::tempdir().unwrap();
        std::fs::write(temp.path().join("interrupt-1.json"), b"{}").unwrap();
        age(temp.path(), Duration::from_secs(10));
        let mut listing = Listing::new(temp.path());
        for _ in 0..5 {
            assert_eq!(sorted(&mut listing), ["interrupt-1.json"]);
        }
        assert_eq!(listing.listed(), 1);
    }

    #[test]
    fn a_file_added_later_is_seen_at_the_next_call() {
        let temp = tempfile::tempdir().unwrap();
        age(temp.path(), Duration::from_secs(10));
        let mut listing = Listing::new(temp.path());
        assert!(sorted(&mut listing).is_empty());
        std::fs::write(temp.path().join("cancel.json"), b"{}").unwrap();
        assert_eq!(sorted(&mut listing), ["cancel.json"]);
        assert_eq!(listing.listed(), 2);
    }

    #[test]
    fn a_recently_changed_folder_is_listed_every_time() {
        // Its time may not move again for a file added in the same clock tick.
        let temp = tempfile::tempdir().unwrap();
        std::fs::write(temp.path().join("message-1.json"), b"{}").unwrap();
        let mut listing = Listing::new(temp.path());
        for _ in 0..3 {
            assert_eq!(sorted(&mut listing), ["message-1.json"]);
        }
        assert_eq!(listing.listed(), 3);
        // A file added without moving the time (as in the same tick) is still found.
        let before = std::fs::metadata(temp.path()).unwrap().modified().unwrap();
        std::fs::write(temp.path().join("message-2.json"), b"{}").unwrap();
        File::open(temp.path())
            .unwrap()
            .set_times(FileTimes::new().set_modified(before))
            .unwrap();
        assert_eq!(sorted(&mut listing), ["message-1.json", "message-2.json"]);
    }

    #[test]
    fn a_replaced_folder_is_listed_again() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("control");
        std::fs::create_dir(&dir).unwrap();
        age(&dir, Duration::from_secs(10));
        let mut listing = Listing::new(&dir);
        assert!(sorted(&mut listing).is_empty());
        let modified = std::fs::metadata(&dir).unwrap().modified().unwrap();
        std::fs::rename(&dir, temp.path().join("old")).unwrap();
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("cancel.json"), b"{}").unwrap();
        File::open(&dir)
            .unwrap()
            .set_times(FileTimes::new().set_modified(modified))
            .unwrap();
        assert_eq!(sorted(&mut listing), ["cancel.json"]);
    }

    #[test]
    fn a_missing_folder_reads_as_none() {
        let temp = tempfile::tempdir().unwrap();
        let mut listing = Listing::new(&temp.path().join("absent"));
        assert_eq!(listing.names(), None);
        assert_eq!(listing.names(), None);
    }
}
