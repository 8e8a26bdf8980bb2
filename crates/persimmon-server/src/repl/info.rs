//! `INFO replication`: Redis 7.0's fields, in its order, from the stream
//! and the replication state (Sentinel parses them).

use super::state::LinkStatus;
use crate::shared::Shared;

/// The section's lines.
pub fn lines(shared: &Shared) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut line = |k: &str, v: String| out.push((k.to_string(), v));
    let (replid, replid2, offset, second, backlog) = {
        let s = shared.repl.lock_stream();
        let backlog = s.backlog.as_ref().map(|b| (b.size(), b.first(), b.len()));
        (
            s.replid.clone(),
            s.replid2.clone(),
            s.offset,
            s.second_offset,
            backlog,
        )
    };
    let st = shared.repl.lock_state();
    match &st.master {
        Some(m) => {
            line("role", "slave".into());
            line("master_host", m.host.clone());
            line("master_port", m.port.to_string());
            let up = m.status == LinkStatus::Connected;
            line("master_link_status", if up { "up" } else { "down" }.into());
            line(
                "master_last_io_seconds_ago",
                if up {
                    m.last_io.elapsed().as_secs() as i64
                } else {
                    -1
                }
                .to_string(),
            );
            line(
                "master_sync_in_progress",
                (m.sync_in_progress as u8).to_string(),
            );
            line("slave_read_repl_offset", offset.to_string());
            line("slave_repl_offset", offset.to_string());
            if !up {
                line(
                    "master_link_down_since_seconds",
                    m.last_io.elapsed().as_secs().to_string(),
                );
            }
            line("slave_priority", setting(shared, "replica-priority", "100"));
            let ro = setting(shared, "replica-read-only", "yes") == "yes";
            line("slave_read_only", (ro as u8).to_string());
            line("replica_announced", "1".into());
        }
        None => line("role", "master".into()),
    }
    line("connected_slaves", st.replicas.len().to_string());
    for (i, p) in st.replicas.values().enumerate() {
        line(
            &format!("slave{i}"),
            format!(
                "ip={},port={},state={},offset={},lag={}",
                p.ip,
                p.port,
                p.state,
                p.ack,
                p.last_ack.elapsed().as_secs()
            ),
        );
    }
    line("master_failover_state", "no-failover".into());
    line("master_replid", replid);
    line("master_replid2", replid2);
    line("master_repl_offset", offset.to_string());
    line("second_repl_offset", second.to_string());
    let (size, first, len) = backlog.unwrap_or((super::role::backlog_size(shared), 0, 0));
    line("repl_backlog_active", (backlog.is_some() as u8).to_string());
    line("repl_backlog_size", size.to_string());
    line("repl_backlog_first_byte_offset", first.to_string());
    line("repl_backlog_histlen", len.to_string());
    out
}

fn setting(shared: &Shared, name: &str, default: &str) -> String {
    shared
        .settings
        .value(name)
        .map(|v| String::from_utf8_lossy(&v).into_owned())
        .unwrap_or_else(|| default.to_string())
}
