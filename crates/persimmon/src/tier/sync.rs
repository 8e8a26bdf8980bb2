//! Group commit of data-file syncs: concurrent writers each need their
//! extent durable before they publish; one `fdatasync` per file serves all
//! writers whose extents were written before it began.
//!
//! Protocol: a writer, after its write returned, registers its file and
//! takes a ticket; the first writer to find no sync running becomes the
//! leader, takes every registered file and the ticket count `upto`, syncs
//! them without the lock, then marks tickets below `upto` durable. Others
//! wait on the condition variable.
//!
//! Invariants:
//! - A ticket is marked durable only by a sync that began after the
//!   ticket's write returned (registration happens after the write, the
//!   leader takes the registrations after that), so `make_durable` never
//!   returns before the caller's bytes are durable.
//! - A failed sync fails exactly the tickets it was to cover; later writers
//!   start afresh (their files are registered again and synced again).

use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::files::DataFile;
use super::observer::SsdObserver;
use crate::error::{Error, Result};

#[derive(Default)]
struct State {
    next_ticket: u64,
    /// Every ticket below this is durable (or failed).
    done_below: u64,
    /// Ranges of tickets whose sync failed, with the error (kept: a waiter
    /// may look after later syncs have succeeded; failures are rare).
    failed: Vec<(std::ops::Range<u64>, String)>,
    leader: bool,
    dirty: Vec<Arc<DataFile>>,
}

/// The group committer of one tier.
#[derive(Default)]
pub struct GroupSync {
    state: Mutex<State>,
    cv: Condvar,
    /// fdatasync calls made (for `syncs per write`).
    pub syncs: std::sync::atomic::AtomicU64,
}

impl GroupSync {
    /// Returns once everything written to `file` before this call is
    /// durable.
    pub fn make_durable(
        &self,
        file: &Arc<DataFile>,
        observer: Option<&Arc<dyn SsdObserver>>,
    ) -> Result<()> {
        let mut st = self.state.lock();
        if !st.dirty.iter().any(|f| Arc::ptr_eq(f, file)) {
            st.dirty.push(file.clone());
        }
        let mine = st.next_ticket;
        st.next_ticket += 1;
        loop {
            if mine < st.done_below {
                // A poisoned file fails every waiter, also those whose
                // ticket a later, "successful" sync covered: the failed one
                // may have dropped their pages.
                let failed = st.failed.iter().find(|(r, _)| r.contains(&mine));
                return match (failed, file.poisoned()) {
                    (Some((_, msg)), _) => Err(Error::io(
                        "sync data file",
                        std::io::Error::other(msg.clone()),
                    )),
                    (None, true) => Err(Error::io(
                        format!("sync {}", file.path.display()),
                        std::io::Error::other("an earlier sync of this data file failed"),
                    )),
                    (None, false) => Ok(()),
                };
            }
            if st.leader {
                self.cv.wait(&mut st);
                continue;
            }
            st.leader = true;
            let upto = st.next_ticket;
            let from = st.done_below;
            let files = std::mem::take(&mut st.dirty);
            drop(st);
            let result = files.iter().try_for_each(|f| {
                self.syncs
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                f.sync(observer)
            });
            st = self.state.lock();
            st.leader = false;
            st.done_below = upto;
            if let Err(e) = result {
                // Bounded: a waiter whose range was dropped still fails,
                // through its poisoned file.
                if st.failed.len() == 256 {
                    st.failed.remove(0);
                }
                st.failed.push((from..upto, e.to_string()));
            }
            self.cv.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn concurrent_writers_share_syncs() {
        let dir = std::env::temp_dir().join(format!("psm-sync-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let direct = super::super::files::probe_direct(&dir);
        let f = Arc::new(DataFile::create(&dir, 1, 1 << 20, &[0; 16], direct, None).unwrap());
        let g = Arc::new(GroupSync::default());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (f, g) = (f.clone(), g.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        g.make_durable(&f, None).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let syncs = g.syncs.load(Ordering::Relaxed);
        assert!((1..=160).contains(&syncs), "{syncs}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
