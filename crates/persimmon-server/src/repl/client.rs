//! A client's replication state: the writes of the command that runs,
//! collected until they are appended to the stream ([`flush`]), the offset
//! of its last write (for WAIT), and what PSYNC or WAIT asks its
//! connection to do.
//!
//! Invariants: a command's writes reach the stream only after it
//! succeeded, all of a transaction's inside one MULTI/EXEC; a session that
//! applies its master's stream propagates nothing of its own.

use std::time::Instant;

use super::stream::Stream;

/// One write of a command, to propagate: its database and arguments.
pub type Cmd = (usize, Vec<Vec<u8>>);

/// A client's replication state (see the module header).
#[derive(Default)]
pub struct ClientRepl {
    pub cmds: Vec<Cmd>,
    /// A handler chose what to propagate: the request is not propagated.
    pub rewritten: bool,
    /// The session applies its master's stream: it propagates nothing of
    /// its own (the link appends the master's bytes verbatim), and it may
    /// write on a read-only replica.
    pub from_master: bool,
    /// Collect at all (replication is on).
    pub active: bool,
    /// The stream's offset after this client's last write.
    pub last_offset: u64,
    /// `REPLCONF listening-port` of a replica connection.
    pub listening_port: u16,
    /// Set by PSYNC/SYNC: the connection becomes a replica's feed.
    pub psync: Option<Psync>,
    /// Set by WAIT: the connection waits for acknowledgements.
    pub wait: Option<WaitFor>,
}

impl ClientRepl {
    /// Records `args` in database `db` as (part of) what the running
    /// command propagates, instead of its request.
    pub fn rewrite(&mut self, db: usize, args: Vec<Vec<u8>>) {
        self.rewritten = true;
        if self.active && !self.from_master {
            self.cmds.push((db, args));
        }
    }

    /// The running command propagates nothing (it changed nothing).
    pub fn nothing(&mut self) {
        self.rewritten = true;
    }
}

/// What the replica asked for.
#[derive(Clone, Debug)]
pub struct Psync {
    /// `None`: the old `SYNC` (no `+FULLRESYNC` line, always a snapshot).
    pub from: Option<(String, i64)>,
    pub listening_port: u16,
}

/// A WAIT's request.
#[derive(Clone, Debug)]
pub struct WaitFor {
    pub replicas: usize,
    /// `None`: no timeout.
    pub deadline: Option<Instant>,
    pub offset: u64,
}

/// Appends what a command collected in `pending` to the stream (wrapped
/// in MULTI/EXEC for a transaction of more than one write) and notes the
/// stream's offset after it as the client's last write; clears `pending`
/// whatever happens. A replica
/// propagates nothing of its own clients (only its master's bytes).
pub fn flush(stream: &mut Stream, pending: &mut ClientRepl, transaction: bool, replica: bool) {
    let cmds = std::mem::take(&mut pending.cmds);
    pending.rewritten = false;
    if cmds.is_empty() || replica || pending.from_master {
        return;
    }
    let wrap = transaction && cmds.len() > 1;
    if wrap {
        stream.command(cmds[0].0, &[b"MULTI".to_vec()]);
    }
    for (db, args) in &cmds {
        stream.command(*db, args);
    }
    if wrap {
        stream.command_anywhere(&[b"EXEC".to_vec()]);
    }
    pending.last_offset = stream.offset;
}
