//! What a command handler works with: the client's [`Session`], the
//! [`Error`] it returns, the helpers that read its arguments, the engine
//! calls every handler makes the same way, the [`Spec`] a command table
//! row is made of (its [`Keys`]: key range and key finder), and the
//! [`CommandTable`] of rows with what is derived from them (the lookup by
//! name, each container's subcommands, how a request resolves to its
//! row). Handlers (`commands/*`) import this module and nothing above it;
//! the table (`commands/table.rs`), the dispatch and the connection sit on
//! top.
//!
//! Invariants:
//! - A handler never awaits: every engine call is synchronous and returns
//!   only once its write is durable, so a reply is queued only after the
//!   write it acknowledges is durable (the reply leaves even later, when the
//!   batch is flushed).
//! - A read-modify-write command runs its whole decision inside one
//!   [`update`] closure, so it is atomic against every other client.
//! - Errors are written as Redis writes them (`ERR ...`, `WRONGTYPE ...`),
//!   so clients that match on them keep working; the texts live here so
//!   that every command words the same failure the same way.
//! - A key longer than the engine's limit cannot exist: [`read`] treats it
//!   as missing, and a write refuses it with [`check_key`] before it runs.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use persimmon_resp::{Args, Reply, Request};
use persimmon_types::dbs::Databases;
use persimmon_types::store::Store;
use persimmon_types::Error;

use crate::client::ClientInfo;
use crate::cmdstats::Tally;
use crate::shared::Shared;

/// The Redis version whose commands and replies the server follows.
pub const REDIS_COMPAT_VERSION: &str = "7.0.15";

/// What the connection does after a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// Send what is queued, then close (QUIT).
    Close,
    /// The reply grew past `client-output-buffer-limit`: close without it.
    OutputLimit,
    /// Close without a reply; the server is stopping (SHUTDOWN).
    Shutdown,
    /// The command blocked (BLPOP on empty lists...): its registration is
    /// in `Session::blocked`; the connection sends the replies before it,
    /// awaits the outcome, queues the reply, then goes on with the input.
    Block,
    /// PSYNC or SYNC: the connection becomes a replica's feed (the request
    /// is in `store.repl.psync`; `repl/feed.rs`).
    Replica,
    /// WAIT: the connection waits for replicas' acknowledgements (the
    /// request is in `store.repl.wait`; `repl/wait.rs`).
    WaitReplicas,
}

/// Per-connection counts, added to the server's now and then (the
/// server's are shared by every connection: updating them per command would
/// make the workers fight over their cache lines). Error replies are
/// counted by the reply writer (`Reply::errors`), per command by `tally`.
#[derive(Default, Debug)]
pub struct Counters {
    pub commands: u64,
    pub hits: u64,
    pub misses: u64,
    pub net_in: u64,
    pub net_out: u64,
    /// Socket reads and writes.
    pub reads: u64,
    pub writes: u64,
    /// Pipeline runs executed as one grouped write, and their commands.
    pub group_runs: u64,
    pub group_commands: u64,
    /// Pipeline runs of writes executed as one atomic unit, and their
    /// commands (`unit_run.rs`).
    pub unit_runs: u64,
    pub unit_commands: u64,
}

/// A client's state as the commands see it.
pub struct Session {
    pub shared: Arc<Shared>,
    pub info: Arc<ClientInfo>,
    /// The command table the connection dispatches through (the dispatch,
    /// `COMMAND`, `EXEC` and the `cmd=` of `CLIENT LIST` read it here: the
    /// table sits above the handlers, which cannot import it).
    pub commands: &'static CommandTable,
    pub out: Reply,
    pub authenticated: bool,
    /// The user the connection runs as (`default` until AUTH); its rules
    /// are checked before every command (`acl::check`).
    pub user: Arc<crate::acl::user::User>,
    pub counters: Counters,
    /// Calls, time, refusals and failures per command (`INFO commandstats`).
    pub tally: Tally,
    pub flow: Flow,
    /// Reused buffer for encoding a value before `put`.
    pub scratch: Vec<u8>,
    /// The selected database, its keys and the watched keys.
    pub store: Store,
    /// What the running command propagates to replicas (`repl/`).
    pub repl: crate::repl::client::ClientRepl,
    /// Keyspace events noted and not yet published (`notify.rs`).
    pub notes: crate::notify::classes::Notes,
    /// Commands queued since `MULTI` (`None`: not in a transaction).
    pub multi: Option<Multi>,
    /// EXEC kept conflicting with other clients: the dispatch runs it again
    /// holding the database map exclusively (no other command runs).
    pub exec_escalate: bool,
    /// This EXEC runs holding the map exclusively.
    pub exec_exclusive: bool,
    /// Role changes a `REPLICAOF` inside `EXEC` left for the dispatch to
    /// finish with the stream's lock it holds.
    pub repl_steps: Vec<crate::repl::role::StreamStep>,
    /// The database map, whose lock every command holds; taken out of the
    /// session while a command runs (so holding its lock borrows nothing
    /// of the session), put back after.
    pub map: Option<Arc<Databases>>,
    /// The wait of a command that blocked (with `Flow::Block`), until the
    /// connection takes it.
    pub blocked: Option<crate::blocking::Registration>,
    /// The channels and patterns subscribed to, and their messages.
    pub pubsub: crate::pubsub::Subscriptions,
    /// `CLIENT REPLY`: whether command replies are sent.
    pub reply_mode: ReplyMode,
    /// While replies are silenced: the pub/sub output the running command
    /// queued (its ranges in `out`), which is sent all the same, as Redis
    /// sends pub/sub output whatever `CLIENT REPLY` says.
    pub pushed: Vec<std::ops::Range<usize>>,
    /// A script's command is running (the monitors show it as `lua`'s).
    pub in_script: bool,
    /// The slow-log entry of the command that blocked, logged when it
    /// replies (`observe.rs`).
    pub slow_pending: Option<crate::slowlog::Entry>,
    /// `MONITOR`: this client's membership of the monitors.
    pub monitor: Option<crate::monitor::Watch>,
}

/// `CLIENT REPLY ON|OFF|SKIP` (pub/sub messages are sent in every mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// Set by `CLIENT REPLY SKIP`: becomes `Skip` after that command.
    SkipNext,
    /// The command running now gets no reply; then `On` again.
    Skip,
}

/// A transaction being queued (`MULTI` ... `EXEC`).
#[derive(Default)]
pub struct Multi {
    pub queued: Vec<Request>,
    /// A command failed to queue: `EXEC` will refuse with `EXECABORT`.
    pub failed: bool,
}

impl Session {
    pub fn new(
        shared: Arc<Shared>,
        info: Arc<ClientInfo>,
        commands: &'static CommandTable,
    ) -> Session {
        let authenticated = !shared.acl.auth_required();
        let user = shared.acl.default_user();
        let tally = shared.command_stats.tally(commands.rows().len());
        Session {
            pubsub: crate::pubsub::Subscriptions::new(shared.pubsub.clone(), info.clone()),
            reply_mode: ReplyMode::On,
            pushed: Vec::new(),
            in_script: false,
            slow_pending: None,
            monitor: None,
            store: Store::new(shared.keyspace.clone()),
            repl: crate::repl::client::ClientRepl::default(),
            map: Some(shared.keyspace.dbs.clone()),
            multi: None,
            exec_escalate: false,
            exec_exclusive: false,
            notes: Default::default(),
            repl_steps: Vec::new(),
            shared,
            info,
            commands,
            out: Reply::new(),
            authenticated,
            user,
            counters: Counters::default(),
            tally,
            flow: Flow::Continue,
            scratch: Vec::new(),
            blocked: None,
        }
    }

    /// A session no client connection owns (the replication link's, the
    /// combiner's): authenticated, under a fresh client id, at the server's
    /// own address.
    pub fn internal(shared: &Arc<Shared>, commands: &'static CommandTable) -> Session {
        let addr = shared.local_addr;
        let info = Arc::new(ClientInfo::new(
            shared.next_client_id(),
            addr,
            addr,
            -1,
            shared.now_ms(),
        ));
        let mut s = Session::new(shared.clone(), info, commands);
        s.authenticated = true;
        s
    }

    /// Counts one call of row `row` run outside `dispatch::execute` (a
    /// pipeline's run) as `execute` counts a command: the command count,
    /// `INFO commandstats` (charged `share` ns; `failed`: it replied an
    /// error), and `CLIENT LIST`'s last
    /// command.
    pub fn count_call(&mut self, row: usize, share: u64, failed: bool) {
        self.counters.commands += 1;
        self.tally.called(row, Some(share), failed);
        self.info
            .last_command
            .store(row + 1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Adds this connection's counts to the server's (or drops them, when
    /// `CONFIG RESETSTAT` ran since they were gathered).
    pub fn publish_counters(&mut self) {
        let published = self
            .shared
            .command_stats
            .publish(&mut self.tally, &mut self.out.errors);
        let c = std::mem::take(&mut self.counters);
        let Some(errors) = published else { return };
        let st = &self.shared.stats;
        for (counter, n) in [
            (&st.total_commands_processed, c.commands),
            (&st.total_error_replies, errors),
            (&st.keyspace_hits, c.hits),
            (&st.keyspace_misses, c.misses),
            (&st.net_input_bytes, c.net_in),
            (&st.net_output_bytes, c.net_out),
            (&st.reads_processed, c.reads),
            (&st.writes_processed, c.writes),
            (&st.group_commit_runs, c.group_runs),
            (&st.group_commit_commands, c.group_commands),
            (&st.unit_runs, c.unit_runs),
            (&st.unit_run_commands, c.unit_commands),
        ] {
            if n > 0 {
                counter.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// Whether the reply being built has grown past the output limit; if so
    /// the connection is closed after this command.
    pub fn output_over_limit(&mut self) -> bool {
        if self.out.len() > self.shared.settings.output_buffer_limit() {
            self.flow = Flow::OutputLimit;
            true
        } else {
            false
        }
    }
}

pub fn syntax() -> Error {
    Error::new("ERR syntax error")
}

pub fn not_integer() -> Error {
    Error::new("ERR value is not an integer or out of range")
}

pub fn overflow() -> Error {
    Error::new("ERR increment or decrement would overflow")
}

pub fn arity(name: &str) -> Error {
    Error::new(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// `ERR unknown subcommand 'x'. Try CMD HELP.`
pub fn unknown_subcommand(command: &str, sub: &[u8]) -> Error {
    Error::new(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        shown(sub, 128),
        command.to_ascii_uppercase()
    ))
}

/// `ERR unknown subcommand or wrong number of arguments for 'x'. Try CMD
/// HELP.`: a known subcommand given arguments it does not take.
pub fn subcommand_syntax(command: &str, sub: &[u8]) -> Error {
    Error::new(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        shown(sub, 128),
        command.to_ascii_uppercase()
    ))
}

/// Client text for a message: lossy UTF-8, cut at `max` bytes.
pub fn shown(bytes: &[u8], max: usize) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(max)]).into_owned()
}

/// Whether `arg` is `word` (ASCII, any case).
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

pub fn int_arg(arg: &[u8]) -> Result<i64, Error> {
    persimmon_resp::parse_i64(arg).ok_or_else(not_integer)
}

/// An integer argument within `min..=max`, with Redis's text when it is
/// outside (`getRangeLongFromObjectOrReply`).
pub fn int_arg_within(arg: &[u8], min: i64, max: i64) -> Result<i64, Error> {
    let n = int_arg(arg)?;
    if !(min..=max).contains(&n) {
        return Err(Error::new(format!(
            "ERR value is out of range, value must between {min} and {max}"
        )));
    }
    Ok(n)
}

/// Runs `f`, which scans the pool, without stalling the worker's other
/// clients.
pub fn blocking<R>(f: impl FnOnce() -> R) -> R {
    tokio::task::block_in_place(f)
}

/// A command handler: reads its arguments, runs the command and queues its
/// reply in `out`, or returns the error that replaces whatever it queued.
pub type Handler = fn(&mut Session, Args<'_>) -> Result<(), Error>;

/// Where a command's keys are, as the argument positions (the name is 0)
/// of Redis's legacy key range, and for a `movablekeys` command the
/// function that finds them in a request.
#[derive(Clone, Copy)]
pub struct Keys {
    /// The first key (0: none), the last (negative: from the end) and the
    /// step between keys.
    pub first: i32,
    pub last: i32,
    pub step: i32,
    /// Finds the keys of a request (its words, the name first) where the
    /// range cannot tell (SORT's STORE, the keys after a count): `None` when
    /// the request does not hold them. Lives next to the handler.
    pub find: Option<KeyFinder>,
}

/// The positions of a request's keys (its words, the name first).
pub type KeyFinder = fn(&[&[u8]]) -> Option<Vec<usize>>;

impl Keys {
    /// The positions of the keys of `words` (a request, the name first):
    /// the finder's, else the range's; `None` when the words do not reach
    /// them.
    pub fn positions(&self, words: &[&[u8]]) -> Option<Vec<usize>> {
        if let Some(find) = self.find {
            return find(words);
        }
        let argc = words.len() as i64;
        let first = self.first as i64;
        let last = match self.last as i64 {
            l if l < 0 => argc + l,
            l => l,
        };
        let step = (self.step as i64).max(1);
        if first < 1 || last < first || last >= argc {
            return None;
        }
        Some(
            (first..=last)
                .step_by(step as usize)
                .map(|i| i as usize)
                .collect(),
        )
    }
}

/// The key positions of a request whose word `at` counts the keys that
/// follow it (SINTERCARD numkeys key ..., ZUNIONSTORE dest numkeys key ...);
/// `None` when the count is not a positive number the request holds.
pub fn keys_after_count(words: &[&[u8]], at: usize) -> Option<Vec<usize>> {
    let n = persimmon_resp::parse_i64(words.get(at)?)?;
    let n = usize::try_from(n).ok().filter(|&n| n > 0)?;
    (at.checked_add(n)? < words.len()).then(|| (at + 1..=at + n).collect())
}

/// One command or subcommand: Redis's `COMMAND` metadata plus its handler.
/// A subcommand's row is named `container|sub` (`config|get`); its
/// container's row (`config`) handles the requests whose subcommand the
/// table does not have.
pub struct Spec {
    pub name: &'static str,
    /// Exact argument count (command name included), or at least -arity.
    pub arity: i32,
    pub flags: &'static [&'static str],
    pub keys: Keys,
    /// The Redis version that added it (`None`: Persimmon's own).
    pub since: Option<&'static str>,
    pub group: &'static str,
    pub summary: &'static str,
    pub handler: Handler,
}

impl Spec {
    pub fn allowed_before_auth(&self) -> bool {
        self.flags.contains(&"no_auth")
    }

    /// Whether the request goes to the replicas: the writes, and PUBLISH
    /// (`may_replicate`, as Redis propagates it).
    pub fn replicated(&self) -> bool {
        self.flags.contains(&"write") || self.flags.contains(&"may_replicate")
    }

    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i64;
        let arity = self.arity as i64;
        if arity >= 0 {
            argc == arity
        } else {
            argc >= -arity
        }
    }

    /// The command's name without the subcommand (`config` of
    /// `config|get`).
    pub fn command_name(&self) -> &'static str {
        self.container_name().unwrap_or(self.name)
    }

    /// The container of a subcommand row (`config` of `config|get`).
    pub fn container_name(&self) -> Option<&'static str> {
        self.name.split_once('|').map(|(container, _)| container)
    }
}

/// The handler of a container row when the request's subcommand is not in
/// the table: Redis's `unknown subcommand` error.
pub fn not_a_subcommand(_: &mut Session, a: Args<'_>) -> Result<(), Error> {
    Err(unknown_subcommand(
        &String::from_utf8_lossy(a.get(0)),
        a.get(1),
    ))
}

/// The command table: its rows in `COMMAND` order (each subcommand after
/// its container), and what the dispatch derives from them once (the
/// lookup by name, each container's subcommands, the rows that hold the
/// replication stream's lock, the rows that change the database map), so
/// a command pays an index, not string compares.
pub struct CommandTable {
    rows: &'static [Spec],
    derived: OnceLock<Derived>,
}

struct Derived {
    names: NameMap,
    /// Per row, its container's row (`None`: a command).
    container: Vec<Option<usize>>,
    /// Per row, its subcommands' rows (empty: not a container).
    subcommands: Vec<Vec<usize>>,
    propagates: Vec<bool>,
    swaps_dbs: Vec<bool>,
}

/// Longest command name (`container|sub` included), for the lookup buffer.
pub const MAX_NAME_BYTES: usize = 32;

impl CommandTable {
    pub const fn new(rows: &'static [Spec]) -> CommandTable {
        CommandTable {
            rows,
            derived: OnceLock::new(),
        }
    }

    /// Every row: the commands and their subcommands.
    pub fn rows(&self) -> &'static [Spec] {
        self.rows
    }

    pub fn row(&self, index: usize) -> &'static Spec {
        &self.rows[index]
    }

    fn derived(&self) -> &Derived {
        self.derived.get_or_init(|| {
            let names: NameMap = self
                .rows
                .iter()
                .enumerate()
                .map(|(i, s)| (s.name.as_bytes(), i))
                .collect();
            let container: Vec<Option<usize>> = self
                .rows
                .iter()
                .map(|spec| {
                    spec.container_name()
                        .and_then(|c| names.get(c.as_bytes()).copied())
                })
                .collect();
            let mut subcommands = vec![Vec::new(); self.rows.len()];
            for (i, c) in container.iter().enumerate() {
                if let Some(c) = *c {
                    subcommands[c].push(i);
                }
            }
            Derived {
                names,
                container,
                subcommands,
                propagates: self
                    .rows
                    .iter()
                    .map(|spec| spec.replicated() || spec.name == "exec")
                    .collect(),
                swaps_dbs: self
                    .rows
                    .iter()
                    .map(|spec| spec.flags.contains(&"swaps_dbs"))
                    .collect(),
            }
        })
    }

    /// The row of the command named `name` (any case; `config|get` names a
    /// subcommand).
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        self.lookup_joined(name, None)
    }

    /// The row named `first`, or `first|second` when `second` is given,
    /// in any case.
    fn lookup_joined(&self, first: &[u8], second: Option<&[u8]>) -> Option<usize> {
        let len = first.len() + second.map_or(0, |s| s.len() + 1);
        if len > MAX_NAME_BYTES {
            return None;
        }
        let mut lower = [0u8; MAX_NAME_BYTES];
        lower[..first.len()].copy_from_slice(first);
        if let Some(second) = second {
            lower[first.len()] = b'|';
            lower[first.len() + 1..len].copy_from_slice(second);
        }
        let lower = &mut lower[..len];
        lower.make_ascii_lowercase();
        self.derived().names.get(&*lower).copied()
    }

    /// The row a request runs as (its words, the name first): its
    /// command's, or for a container given a subcommand, the subcommand's
    /// (`CONFIG GET x`: `config|get`). `Err(container)` when the container
    /// has no such subcommand; `None` when there is no such command.
    pub fn resolve<'a>(
        &self,
        mut words: impl Iterator<Item = &'a [u8]>,
    ) -> Option<Result<usize, usize>> {
        let index = self.lookup(words.next()?)?;
        if self.is_subcommand(index) {
            return None; // `config|get` is no command's name
        }
        let Some(sub) = words.next().filter(|_| self.is_container(index)) else {
            return Some(Ok(index));
        };
        let name = self.rows[index].name.as_bytes();
        Some(self.lookup_joined(name, Some(sub)).ok_or(index))
    }

    /// Whether row `index` has subcommands.
    pub fn is_container(&self, index: usize) -> bool {
        !self.derived().subcommands[index].is_empty()
    }

    /// The rows of container `index`'s subcommands, in table order.
    pub fn subcommands(&self, index: usize) -> &[usize] {
        &self.derived().subcommands[index]
    }

    /// Whether row `index` is a subcommand's (`config|get`).
    pub fn is_subcommand(&self, index: usize) -> bool {
        self.derived().container[index].is_some()
    }

    /// The rows of the commands (not the subcommands), in table order.
    pub fn commands(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.rows.len()).filter(|&i| !self.is_subcommand(i))
    }

    /// Whether row `index` may write, so runs holding the replication
    /// stream's lock: the `write` and `may_replicate` rows and EXEC.
    pub fn propagates(&self, index: usize) -> bool {
        self.derived().propagates[index]
    }

    /// Whether row `index` changes the database map (runs holding it
    /// exclusively).
    pub fn swaps_dbs(&self, index: usize) -> bool {
        self.derived().swaps_dbs[index]
    }
}

/// The table as the ACL reads it (`acl::commands`).
impl crate::acl::commands::Commands for CommandTable {
    fn len(&self) -> usize {
        self.rows.len()
    }

    fn name(&self, row: usize) -> &'static str {
        self.rows[row].name
    }

    fn flags(&self, row: usize) -> &'static [&'static str] {
        self.rows[row].flags
    }

    fn group(&self, row: usize) -> &'static str {
        self.rows[row].group
    }

    fn lookup(&self, name: &[u8]) -> Option<usize> {
        CommandTable::lookup(self, name)
    }

    fn is_subcommand(&self, row: usize) -> bool {
        CommandTable::is_subcommand(self, row)
    }

    fn is_container(&self, row: usize) -> bool {
        CommandTable::is_container(self, row)
    }

    fn subcommands(&self, row: usize) -> &[usize] {
        CommandTable::subcommands(self, row)
    }

    fn key_positions(&self, row: usize, words: &[&[u8]]) -> Option<Vec<usize>> {
        let keys = &self.rows[row].keys;
        if keys.first == 0 && keys.find.is_none() {
            return None;
        }
        keys.positions(words)
    }
}

/// FNV-1a: command names are short and trusted to be few, so a fast
/// non-keyed hash is enough (the map holds only the table's own names).
#[derive(Default, Clone, Copy)]
struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type NameMap = HashMap<&'static [u8], usize, std::hash::BuildHasherDefault<Fnv>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(first: i32, last: i32, step: i32) -> Keys {
        Keys {
            first,
            last,
            step,
            find: None,
        }
    }

    fn words(n: usize) -> Vec<&'static [u8]> {
        vec![b"x"; n]
    }

    #[test]
    fn key_positions_follow_first_last_and_step() {
        assert_eq!(keys(1, 1, 1).positions(&words(3)), Some(vec![1]));
        assert_eq!(keys(1, -1, 1).positions(&words(4)), Some(vec![1, 2, 3]));
        assert_eq!(keys(1, -1, 2).positions(&words(5)), Some(vec![1, 3]));
        assert_eq!(keys(1, -1, 2).positions(&words(4)), Some(vec![1, 3]));
        assert_eq!(keys(2, 2, 1).positions(&words(3)), Some(vec![2]));
        assert_eq!(keys(1, 1, 1).positions(&words(1)), None);
        assert_eq!(keys(0, 0, 0).positions(&words(3)), None);
    }

    #[test]
    fn a_key_finder_takes_over_the_range() {
        let finder = Keys {
            find: Some(|w| keys_after_count(w, 1)),
            ..keys(0, 0, 0)
        };
        let req: Vec<&[u8]> = vec![b"zunion", b"2", b"a", b"b", b"WITHSCORES"];
        assert_eq!(finder.positions(&req), Some(vec![2, 3]));
        let req: Vec<&[u8]> = vec![b"zunion", b"3", b"a", b"b"];
        assert_eq!(finder.positions(&req), None);
        let req: Vec<&[u8]> = vec![b"zunion", b"-1", b"a"];
        assert_eq!(finder.positions(&req), None);
    }
}
