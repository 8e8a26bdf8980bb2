//! RANDOMKEY: a key of the selected database chosen uniformly at random,
//! or nil when the database is empty.
//!
//! The engine cannot jump to a random key, so RANDOMKEY walks the
//! database's keys (under `blocking`) and stops early: it draws `r` below
//! the pool's key count `N` (O(1), every database's keys, so at least this
//! database's count `n`), and returns the `r`-th key of the walk, or, when
//! the walk ends first (`r >= n`), a key kept by reservoir sampling over
//! the whole walk. Each key comes out with probability `1/N + (N-n)/N · 1/n
//! = 1/n`. Cost: about `r` keys visited — half the database on average
//! when it is the only one, the whole of it (O(n)) when it holds few of the
//! pool's keys or none.
//!
//! Invariants: never returns a key that is not live for the client (the
//! pick is checked through the store, so a key an enclosing EXEC deleted
//! or one that expired meanwhile is drawn again, a few times at most); a
//! key only an enclosing EXEC created, not yet in the pool, is never drawn.

use persimmon_resp::Args;
use persimmon_types::dbs::keys_of;
use persimmon_types::{random, Error};

use crate::session::{blocking, Session};
use crate::shared::Shared;

/// Draws before giving up on finding a live key (each one walks).
const DRAWS: usize = 4;

pub fn randomkey(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let ns = s.store.namespace();
    let shared = s.shared.clone();
    for _ in 0..DRAWS {
        let Some(key) = blocking(|| pick(&shared, ns))? else {
            break;
        };
        if s.store.exists(&key)? {
            s.out.bulk(&key);
            return Ok(());
        }
    }
    s.out.null();
    Ok(())
}

/// One draw over namespace `ns` (see the module header).
fn pick(shared: &Shared, ns: u32) -> Result<Option<Vec<u8>>, Error> {
    let total = shared.keyspace.db.len();
    if total == 0 {
        return Ok(None);
    }
    let stop_at = random::below(total);
    let mut seen = 0u64;
    let mut kept = None;
    keys_of(
        &shared.keyspace.db,
        ns,
        || shared.is_stopping(),
        |key| {
            if seen == stop_at {
                kept = Some(key.to_vec());
                return Ok(false);
            }
            seen += 1;
            if random::below(seen) == 0 {
                kept = Some(key.to_vec());
            }
            Ok(true)
        },
    )?;
    Ok(kept)
}
