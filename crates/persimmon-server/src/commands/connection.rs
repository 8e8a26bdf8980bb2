//! Connection commands: PING, ECHO, HELLO, AUTH, QUIT, READONLY and
//! READWRITE (refused: not a cluster), and the CLIENT
//! subcommands (ID, SETNAME, GETNAME, SETINFO, LIST, INFO, NO-EVICT,
//! UNBLOCK, KILL, REPLY, HELP), one handler each (PAUSE and UNPAUSE are in
//! `pause.rs`).
//!
//! Invariants:
//! - A password is compared without stopping at the first differing byte,
//!   so the reply's timing does not tell how much of a guess was right.
//! - A failed AUTH (or HELLO ... AUTH) leaves the connection as it was, as
//!   in Redis: a wrong guess never logs an authenticated client out.
//! - Client names and library fields are printable ASCII without blanks,
//!   so every `CLIENT LIST` line splits back into its `key=value` fields.

use std::sync::atomic::Ordering;

use persimmon_resp::Args;
use persimmon_types::Error;

use crate::client::ClientInfo;
use crate::session::{
    arity, int_arg, is, shown, subcommand_syntax, syntax, Flow, Session, REDIS_COMPAT_VERSION,
};

pub fn ping(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if s.pubsub.active() && !s.out.resp3 && a.len() <= 2 {
        // RESP2's subscribed mode: `["pong", message or ""]`.
        s.out.array(2);
        s.out.bulk(b"pong");
        s.out.bulk(if a.len() == 2 { a.get(1) } else { b"" });
        return Ok(());
    }
    match a.len() {
        1 => s.out.simple("PONG"),
        2 => s.out.bulk(a.get(1)),
        _ => return Err(arity("ping")),
    }
    Ok(())
}

pub fn echo(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    s.out.bulk(a.get(1));
    Ok(())
}

/// Logs the connection in as `user` if `password` is one of its (hashes
/// compared without stopping at the first differing byte, `acl::user`);
/// a failure is logged in `ACL LOG` and leaves the connection as it was.
fn log_in(s: &mut Session, user: &[u8], password: &[u8]) -> Result<(), Error> {
    let Some(found) = s.shared.acl.authenticate(user, password) else {
        let mut info = String::new();
        let me = s.info.clone();
        describe_client(s, &me, &mut info);
        let event = crate::commands::acl::auth_failure(user, info);
        s.shared
            .acl
            .log
            .add(event, s.shared.settings.acllog_max_len());
        return Err(Error::new(WRONGPASS));
    };
    s.info.set_user_name(&found.name);
    s.user = found;
    s.authenticated = true;
    Ok(())
}

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

pub fn auth(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (user, password) = match a.len() {
        2 => (None, a.get(1)),
        3 => (Some(a.get(1)), a.get(2)),
        _ => return Err(syntax()),
    };
    if user.is_none() && s.shared.acl.default_user().rules().nopass {
        return Err(Error::new(
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?",
        ));
    }
    log_in(s, user.unwrap_or(b"default"), password)?;
    s.out.ok();
    Ok(())
}

pub fn hello(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let mut version = None;
    if a.len() >= 2 {
        let v = int_arg(a.get(1))
            .map_err(|_| Error::new("ERR Protocol version is not an integer or out of range"))?;
        if v != 2 && v != 3 {
            return Err(Error::new("NOPROTO unsupported protocol version"));
        }
        version = Some(v);
    }
    let mut credentials = None;
    let mut name = None;
    let mut i = 2;
    while i < a.len() {
        let opt = a.get(i);
        if is(opt, "AUTH") && i + 2 < a.len() {
            credentials = Some((a.get(i + 1), a.get(i + 2)));
            i += 3;
        } else if is(opt, "SETNAME") && i + 1 < a.len() {
            name = Some(a.get(i + 1));
            i += 2;
        } else {
            return Err(Error::new(format!(
                "ERR Syntax error in HELLO option '{}'",
                shown(opt, 128)
            )));
        }
    }
    if let Some((user, password)) = credentials {
        log_in(s, user, password)?;
    }
    if !s.authenticated {
        return Err(Error::new(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and \
             select the RESP protocol version at the same time",
        ));
    }
    if let Some(name) = name {
        check_client_name(name)?;
        *lock(&s.info.name) = name.to_vec();
    }
    if let Some(v) = version {
        s.out.resp3 = v == 3;
        s.info.resp.store(v as u8, Ordering::Relaxed);
    }
    hello_reply(s);
    Ok(())
}

/// HELLO's map: who the server is and the connection's protocol.
fn hello_reply(s: &mut Session) {
    let out = &mut s.out;
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"persimmon");
    out.bulk(b"version");
    out.bulk(REDIS_COMPAT_VERSION.as_bytes());
    out.bulk(b"proto");
    out.int(if out.resp3 { 3 } else { 2 });
    out.bulk(b"id");
    out.int(s.info.id as i64);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
}

/// READONLY and READWRITE: a cluster replica's read modes; a server that
/// is not a cluster refuses them, as Redis does.
pub fn cluster_mode(_s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    Err(Error::new("ERR This instance has cluster support disabled"))
}

pub fn quit(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out.ok();
    s.flow = Flow::Close;
    Ok(())
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Redis refuses names with blanks, newlines or other special characters.
fn check_client_name(name: &[u8]) -> Result<(), Error> {
    if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return Err(Error::new(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    Ok(())
}

const CLIENT_HELP: [&str; 30] = [
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ID",
    "    Return the ID of the current connection.",
    "GETNAME",
    "    Return the name of the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "SETINFO <LIB-NAME|LIB-VER> <value>",
    "    Set client library name or version.",
    "LIST [TYPE normal] [ID <id> [<id> ...]]",
    "    Return information about client connections.",
    "INFO",
    "    Return information about the current client connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect the current client connection from eviction (nothing is evicted here).",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are: ID <client-id>, TYPE <normal|master|replica|pubsub>,",
    "    USER <username>, ADDR <ip:port>, LADDR <ip:port>, SKIPME (yes|no).",
    "HELP",
    "    Print this help.",
];

/// CLIENT ID
pub fn client_id(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out.int(s.info.id as i64);
    Ok(())
}

/// CLIENT SETNAME name
pub fn client_setname(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    check_client_name(a.get(2))?;
    *lock(&s.info.name) = a.get(2).to_vec();
    s.out.ok();
    Ok(())
}

/// CLIENT GETNAME
pub fn client_getname(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let name = lock(&s.info.name).clone();
    if name.is_empty() {
        s.out.null();
    } else {
        s.out.bulk(&name);
    }
    Ok(())
}

/// CLIENT INFO: this connection's `CLIENT LIST` line.
pub fn client_info(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let mut text = String::new();
    let me = s.info.clone();
    describe_client(s, &me, &mut text);
    s.out.verbatim(text.as_bytes());
    Ok(())
}

/// CLIENT NO-EVICT ON|OFF: nothing is ever evicted.
pub fn client_no_evict(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    on_or_off(s, &a)
}

/// OK to a switch that changes nothing here (`ON` or `OFF`).
fn on_or_off(s: &mut Session, a: &Args<'_>) -> Result<(), Error> {
    if !(is(a.get(2), "ON") || is(a.get(2), "OFF")) {
        return Err(syntax());
    }
    s.out.ok();
    Ok(())
}

/// CLIENT HELP
pub fn client_help(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out.simple_lines(&CLIENT_HELP);
    Ok(())
}

/// CLIENT REPLY ON|OFF|SKIP: ON replies OK; OFF and SKIP reply nothing
/// (the dispatch drops the replies, see `dispatch::execute`).
pub fn client_reply(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    use crate::session::ReplyMode;
    let mode = a.get(2);
    if is(mode, "ON") {
        s.reply_mode = ReplyMode::On;
        s.out.ok();
    } else if is(mode, "OFF") {
        s.reply_mode = ReplyMode::Off;
    } else if is(mode, "SKIP") {
        if s.reply_mode != ReplyMode::Off {
            s.reply_mode = ReplyMode::SkipNext;
        }
    } else {
        return Err(syntax());
    }
    Ok(())
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: ends the wait of a client blocked
/// on keys (BLPOP...) as if it timed out, or with an `UNBLOCKED` error; 1
/// if that client was blocked, else 0.
pub fn client_unblock(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    use crate::blocking::Outcome;
    if a.len() > 4 {
        return Err(subcommand_syntax("client", b"unblock"));
    }
    let outcome = match a.len() {
        4 if is(a.get(3), "TIMEOUT") => Outcome::TimedOut,
        4 if is(a.get(3), "ERROR") => {
            Outcome::Failed(Error::new("UNBLOCKED client unblocked via CLIENT UNBLOCK"))
        }
        4 => {
            return Err(Error::new(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ))
        }
        _ => Outcome::TimedOut,
    };
    let id = int_arg(a.get(2))?;
    let unblocked = u64::try_from(id).is_ok_and(|id| s.shared.blocked.unblock(id, outcome));
    s.out.int(unblocked as i64);
    Ok(())
}

/// CLIENT SETINFO LIB-NAME|LIB-VER value
pub fn client_setinfo(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (option, value) = (a.get(2), a.get(3));
    if value.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return Err(Error::new(format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            shown(option, 32)
        )));
    }
    if is(option, "LIB-NAME") {
        *lock(&s.info.lib_name) = value.to_vec();
    } else if is(option, "LIB-VER") {
        *lock(&s.info.lib_ver) = value.to_vec();
    } else {
        return Err(Error::new(format!(
            "ERR Unrecognized option '{}'",
            shown(option, 128)
        )));
    }
    s.out.ok();
    Ok(())
}

/// CLIENT LIST [TYPE type] [ID id ...]. A killed client (on its way out:
/// CLIENT KILL, ACL DELUSER) is no longer listed.
pub fn client_list(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (ids, kind) = client_list_filter(&a)?;
    let clients: Vec<_> = lock(&s.shared.clients)
        .values()
        .filter(|c| !c.is_killed())
        .cloned()
        .collect();
    let mut text = String::new();
    for c in clients {
        if ids.as_ref().is_none_or(|ids| ids.contains(&c.id))
            && kind.is_none_or(|k| c.client_type() == k)
        {
            describe_client(s, &c, &mut text);
        }
    }
    s.out.verbatim(text.as_bytes());
    Ok(())
}

/// Redis's name of a client type (`replica` is also `slave`), or its error.
fn client_type_named(t: &[u8]) -> Result<&'static str, Error> {
    ["normal", "master", "slave", "replica", "pubsub"]
        .into_iter()
        .find(|name| is(t, name))
        .map(|name| if name == "replica" { "slave" } else { name })
        .ok_or_else(|| Error::new(format!("ERR Unknown client type '{}'", shown(t, 64))))
}

/// The ids and the type CLIENT LIST's options ask for (`None`: any).
fn client_list_filter(a: &Args<'_>) -> Result<(Option<Vec<u64>>, Option<&'static str>), Error> {
    let argc = a.len();
    let mut ids = None;
    let mut kind = None;
    let mut i = 2;
    while i < argc {
        if is(a.get(i), "TYPE") && i + 1 < argc {
            kind = Some(client_type_named(a.get(i + 1))?);
            i += 2;
        } else if is(a.get(i), "ID") && i + 1 < argc {
            let mut list = Vec::new();
            for id in a.from(i + 1) {
                match int_arg(id) {
                    Ok(n) if n > 0 => list.push(n as u64),
                    _ => return Err(Error::new("ERR Invalid client ID")),
                }
            }
            ids = Some(list);
            i = argc;
        } else {
            return Err(syntax());
        }
    }
    Ok((ids, kind))
}

/// CLIENT KILL ip:port (`+OK` or `No such client`; may kill the caller),
/// or CLIENT KILL with filters (ID, TYPE, ADDR, LADDR, USER, SKIPME): the
/// number of clients killed. A killed client finishes the command it is
/// running and closes without further replies; the caller, when it kills
/// itself, gets this reply first.
pub fn client_kill(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let filter = match a.len() {
        0..=2 => return Err(syntax()),
        3 => KillFilter {
            addr: Some(a.get(2)),
            skip_me: false,
            ..KillFilter::default()
        },
        _ => kill_filter(s, &a)?,
    };
    let clients: Vec<_> = lock(&s.shared.clients).values().cloned().collect();
    let mut killed = 0;
    for c in clients.iter().filter(|c| filter.matches(c, s.info.id)) {
        if c.id == s.info.id {
            s.flow = Flow::Close;
        } else {
            c.kill();
        }
        killed += 1;
    }
    if a.len() == 3 {
        if killed == 0 {
            return Err(Error::new("ERR No such client"));
        }
        s.out.ok();
    } else {
        s.out.int(killed);
    }
    Ok(())
}

/// Which clients a CLIENT KILL names; every given filter must match.
struct KillFilter<'a> {
    id: Option<u64>,
    kind: Option<&'static str>,
    addr: Option<&'a [u8]>,
    laddr: Option<&'a [u8]>,
    user: Option<String>,
    skip_me: bool,
}

impl Default for KillFilter<'_> {
    fn default() -> Self {
        KillFilter {
            id: None,
            kind: None,
            addr: None,
            laddr: None,
            user: None,
            skip_me: true,
        }
    }
}

impl KillFilter<'_> {
    /// Whether `c` is to be killed: every filter matches and it is not
    /// already on its way out (killed, its task not yet ended).
    fn matches(&self, c: &ClientInfo, me: u64) -> bool {
        !c.is_killed()
            && self.id.is_none_or(|id| c.id == id)
            && self.kind.is_none_or(|k| c.client_type() == k)
            && self
                .addr
                .is_none_or(|addr| c.addr.to_string().as_bytes() == addr)
            && self
                .laddr
                .is_none_or(|laddr| c.laddr.to_string().as_bytes() == laddr)
            && self.user.as_ref().is_none_or(|u| c.user_name() == *u)
            && !(self.skip_me && c.id == me)
    }
}

/// CLIENT KILL's `option value` pairs, with Redis's errors.
fn kill_filter<'a>(s: &Session, a: &Args<'a>) -> Result<KillFilter<'a>, Error> {
    let mut f = KillFilter::default();
    let mut i = 2;
    while i < a.len() {
        if i + 1 >= a.len() {
            return Err(syntax());
        }
        let (option, value) = (a.get(i), a.get(i + 1));
        if is(option, "ID") {
            let id = int_arg(value)
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| Error::new("ERR client-id should be greater than 0"))?;
            f.id = Some(id as u64);
        } else if is(option, "TYPE") {
            f.kind = Some(client_type_named(value)?);
        } else if is(option, "ADDR") {
            f.addr = Some(value);
        } else if is(option, "LADDR") {
            f.laddr = Some(value);
        } else if is(option, "USER") {
            if s.shared.acl.user(value).is_none() {
                return Err(Error::new(format!(
                    "ERR No such user '{}'",
                    shown(value, 128)
                )));
            }
            f.user = Some(String::from_utf8_lossy(value).into_owned());
        } else if is(option, "SKIPME") {
            f.skip_me = match value {
                v if is(v, "yes") => true,
                v if is(v, "no") => false,
                _ => return Err(syntax()),
            };
        } else {
            return Err(syntax());
        }
        i += 2;
    }
    Ok(f)
}

/// One `CLIENT LIST` line: Redis 7.0's fields in its order (the output
/// buffer figures are 0: replies leave with each batch), then the client
/// library's name and version.
pub fn describe_client(s: &Session, c: &ClientInfo, text: &mut String) {
    use std::fmt::Write;
    let now = s.shared.now_ms();
    let idle = now.saturating_sub(c.last_active_ms.load(Ordering::Relaxed)) / 1000;
    let cmd = match c.last_command.load(Ordering::Relaxed) {
        0 => "NULL",
        i => s.commands.row(i - 1).name,
    };
    let text_of = |m: &std::sync::Mutex<Vec<u8>>| String::from_utf8_lossy(&lock(m)).into_owned();
    let qbuf = c.query_buffer_bytes.load(Ordering::Relaxed);
    let qbuf_free = c.query_buffer_free.load(Ordering::Relaxed);
    let _ = writeln!(
        text,
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub=0 \
         multi=-1 qbuf={qbuf} qbuf-free={qbuf_free} argv-mem=0 multi-mem=0 rbs={} rbp={} obl=0 \
         oll=0 omem=0 tot-mem={} events=r cmd={} user={} redir=-1 resp={} lib-name={} \
         lib-ver={}",
        c.id,
        c.addr,
        c.laddr,
        c.fd,
        text_of(&c.name),
        c.created.elapsed().as_secs(),
        idle,
        client_flags(c),
        c.db.load(Ordering::Relaxed),
        c.sub.load(Ordering::Relaxed),
        c.psub.load(Ordering::Relaxed),
        qbuf + qbuf_free,
        qbuf + qbuf_free,
        qbuf + qbuf_free + std::mem::size_of::<ClientInfo>(),
        cmd,
        c.user_name(),
        c.resp.load(Ordering::Relaxed),
        text_of(&c.lib_name),
        text_of(&c.lib_ver),
    );
}

/// `CLIENT LIST`'s `flags=`: `S` a replica's feed, `O` a monitor, `P`
/// subscribed, else `N`.
fn client_flags(c: &ClientInfo) -> &'static str {
    match c.client_type() {
        "slave" => "S",
        _ if c.monitor.load(Ordering::Relaxed) => "O",
        "pubsub" => "P",
        _ => "N",
    }
}
