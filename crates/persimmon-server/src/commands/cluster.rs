//! CLUSTER on a server without cluster support: as Redis 7.0 started with
//! `cluster-enabled no`, every subcommand (HELP too) replies `This
//! instance has cluster support disabled`. The rows exist so `COMMAND`
//! lists them as Redis does.
//!
//! Invariant: no subcommand changes anything.

use persimmon_resp::Args;
use persimmon_types::Error;

use crate::session::Session;

/// Every CLUSTER subcommand.
pub fn disabled(_s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    Err(Error::new("ERR This instance has cluster support disabled"))
}
