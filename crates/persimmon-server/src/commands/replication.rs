//! The replication commands: REPLICAOF (SLAVEOF), ROLE, REPLCONF, PSYNC,
//! SYNC and WAIT. The work is in `../repl/`; these read the arguments,
//! check them as Redis does, and reply.
//!
//! Invariants: PSYNC and SYNC only record the request and hand the
//! connection over (`Flow::Replica`); WAIT only records what to wait for
//! (`Flow::WaitReplicas`): no handler awaits.

use std::time::{Duration, Instant};

use persimmon_resp::Args;
use persimmon_types::Error;

use crate::repl::client::{Psync, WaitFor};
use crate::repl::role::{self, StreamStep};
use crate::repl::state::LinkStatus;
use crate::session::{int_arg, is, syntax, Flow, Session};

/// REPLICAOF host port | REPLICAOF NO ONE.
pub fn replicaof(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if is(a.get(1), "no") && is(a.get(2), "one") {
        if let Some(step) = role::promote(&s.shared) {
            after_turn(s, step);
        }
        s.out.ok();
        return Ok(());
    }
    let host = String::from_utf8(a.get(1).to_vec()).map_err(|_| syntax())?;
    let port = int_arg(a.get(2))?;
    let port = u16::try_from(port).map_err(|_| Error::new("ERR Invalid master port"))?;
    let same = {
        let st = s.shared.repl.lock_state();
        st.master
            .as_ref()
            .is_some_and(|m| m.host.eq_ignore_ascii_case(&host) && m.port == port)
    };
    if same {
        s.out.simple("OK Already connected to specified master");
        return Ok(());
    }
    let step = role::start(&s.shared, host, port);
    after_turn(s, step);
    s.out.ok();
    Ok(())
}

/// Finishes a role change: now, or — inside an `EXEC` that holds the
/// stream's lock (`store.repl.active`) — by the dispatch before it lets
/// the lock go (see [`StreamStep`]).
fn after_turn(s: &mut Session, step: StreamStep) {
    if s.repl.active {
        s.repl_steps.push(step);
    } else {
        role::finish_now(&s.shared, step);
    }
}

/// ROLE: `master offset [[ip port ack]...]` or `slave host port state
/// offset`.
pub fn role(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let offset = s.shared.repl.lock_stream().offset as i64;
    let st = s.shared.repl.lock_state();
    match &st.master {
        Some(m) => {
            s.out.array(5);
            s.out.bulk(b"slave");
            s.out.bulk(m.host.as_bytes());
            s.out.int(m.port as i64);
            s.out.bulk(m.status.role_word().as_bytes());
            let applied = match m.status {
                LinkStatus::Connected => offset,
                _ => -1,
            };
            s.out.int(applied);
        }
        None => {
            s.out.array(3);
            s.out.bulk(b"master");
            s.out.int(offset);
            s.out.array(st.replicas.len());
            for p in st.replicas.values() {
                s.out.array(3);
                s.out.bulk(p.ip.as_bytes());
                s.out.bulk(p.port.to_string().as_bytes());
                s.out.bulk(p.ack.to_string().as_bytes());
            }
        }
    }
    Ok(())
}

/// REPLCONF option value ...: what a replica tells its master before
/// PSYNC. `ACK` from a connection that is not a feed yet is ignored (no
/// reply), as Redis does; `GETACK` is for replicas (their master asks).
pub fn replconf(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len().is_multiple_of(2) {
        return Err(syntax());
    }
    let mut i = 1;
    while i + 1 < a.len() {
        let (opt, value) = (a.get(i), a.get(i + 1));
        if is(opt, "listening-port") {
            let port = int_arg(value)?;
            s.repl.listening_port = u16::try_from(port).map_err(|_| syntax())?;
        } else if is(opt, "ack") || is(opt, "getack") {
            // An ACK outside a feed, or a GETACK to a master: no reply.
            return Ok(());
        } else if !(is(opt, "ip-address")
            || is(opt, "capa")
            || is(opt, "rdb-only")
            || is(opt, "rdb-filter-only"))
        {
            return Err(Error::new(format!(
                "ERR Unrecognized REPLCONF option: {}",
                crate::session::shown(opt, 64)
            )));
        }
        i += 2;
    }
    s.out.ok();
    Ok(())
}

/// PSYNC replid offset.
pub fn psync(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let id = String::from_utf8_lossy(a.get(1)).into_owned();
    let offset = int_arg(a.get(2))?;
    start_feed(s, Some((id, offset)))
}

/// SYNC: always a snapshot.
pub fn sync(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    start_feed(s, None)
}

fn start_feed(s: &mut Session, from: Option<(String, i64)>) -> Result<(), Error> {
    if s.shared.repl.is_replica() {
        // A replica serves replicas too (chained), but only once it is in
        // sync with its own master.
        let st = s.shared.repl.lock_state();
        if st.master.as_ref().map(|m| m.status) != Some(LinkStatus::Connected) {
            return Err(Error::new(
                "NOMASTERLINK Can't SYNC while not connected with my master",
            ));
        }
    }
    s.repl.psync = Some(Psync {
        from,
        listening_port: s.repl.listening_port,
    });
    s.flow = Flow::Replica;
    Ok(())
}

/// WAIT numreplicas timeout.
pub fn wait(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let replicas = int_arg(a.get(1))?;
    let timeout = persimmon_resp::parse_i64(a.get(2))
        .ok_or_else(|| Error::new("ERR timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(Error::new("ERR timeout is negative"));
    }
    if s.shared.repl.is_replica() {
        return Err(Error::new(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.",
        ));
    }
    let w = WaitFor {
        replicas: replicas.max(0) as usize,
        // A timeout too far for the clock is none.
        deadline: (timeout > 0)
            .then(|| Instant::now().checked_add(Duration::from_millis(timeout as u64)))
            .flatten(),
        offset: s.repl.last_offset,
    };
    if crate::repl::wait::count(&s.shared, w.offset) >= w.replicas {
        s.out
            .int(crate::repl::wait::count(&s.shared, w.offset) as i64);
        return Ok(());
    }
    if s.multi.is_some() || s.store.in_unit() {
        // Inside EXEC nothing can be waited for: the count now.
        s.out
            .int(crate::repl::wait::count(&s.shared, w.offset) as i64);
        return Ok(());
    }
    s.repl.wait = Some(w);
    s.flow = Flow::WaitReplicas;
    Ok(())
}
