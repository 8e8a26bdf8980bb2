//! The Redis protocol's wire format (RESP2 and RESP3), and nothing else:
//! the bottom layer of Persimmon's server, beside the data layer.
//!
//! ```text
//!   persimmon-server   listener, connections, command table, handlers, replication
//!      |          \
//!      v           v
//!   persimmon-types   persimmon-resp  <- this crate: bytes in, bytes out
//!      |
//!      v
//!   persimmon          the engine
//! ```
//!
//! - [`request`]: a resumable parser for multibulk and inline requests, the
//!   limits a request must respect before it is buffered
//!   ([`ParseLimits`], Redis's unauthenticated caps), [`Args`] borrowed
//!   from the input, [`Request`] owned, and [`encode`] for the requests
//!   the server itself sends.
//! - [`reply`]: [`Reply`], replies written straight into an output
//!   buffer in RESP2 or RESP3, every error reply counted by its code
//!   ([`ErrorTally`]).
//!
//! It knows nothing of keys, values, commands or the engine: a request is a
//! list of byte strings, a reply a sequence of typed RESP frames. Who uses
//! it: the server (its connections and its replication link), and anything
//! else that speaks to or as a Redis server.

#![forbid(unsafe_code)]

mod error_tally;
pub mod reply;
pub mod request;

pub use error_tally::ErrorTally;
pub use reply::Reply;
pub use request::{
    encode, parse_i64, split_args, Args, ParseLimits, Progress, ProtocolError, Request,
    RequestParser,
};
