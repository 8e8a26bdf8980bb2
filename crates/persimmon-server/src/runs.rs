//! A run of a pipeline's requests (`pipeline.rs`): their arguments as
//! ranges of the connection's input buffer ([`Run`]), or copied out of it
//! to go to another task ([`OwnedRun`], `combiner/`).
//!
//! Invariant: every range of a run lies inside the buffer it is read
//! against, and each request has at least its command's name.

use std::ops::Range;

use persimmon_resp::Args;

/// A run of requests copied out of the input buffer (to go to another
/// task: `combiner/`).
pub struct OwnedRun {
    input: Vec<u8>,
    args: Vec<Range<usize>>,
    reqs: Vec<Range<usize>>,
}

impl OwnedRun {
    /// A copy of the requests `reqs` (spans of `args`, ranges of `input`).
    pub fn copy(input: &[u8], args: &[Range<usize>], reqs: Vec<Range<usize>>) -> OwnedRun {
        let start = args.iter().map(|r| r.start).min().unwrap_or(0);
        let end = args.iter().map(|r| r.end).max().unwrap_or(0);
        OwnedRun {
            input: input[start..end].to_vec(),
            args: args
                .iter()
                .map(|r| r.start - start..r.end - start)
                .collect(),
            reqs,
        }
    }

    /// The requests made of `commands`, each its words (the command's name
    /// first): [`Request::from_words`](persimmon_resp::Request::from_words)
    /// for several requests.
    pub fn from_words(commands: &[&[&[u8]]]) -> OwnedRun {
        let (mut input, mut args, mut reqs) = (Vec::new(), Vec::new(), Vec::new());
        for words in commands {
            let first = args.len();
            for word in *words {
                args.push(input.len()..input.len() + word.len());
                input.extend_from_slice(word);
            }
            reqs.push(first..args.len());
        }
        OwnedRun { input, args, reqs }
    }

    pub fn view(&self) -> Run<'_> {
        Run {
            input: &self.input,
            args: &self.args,
            reqs: &self.reqs,
        }
    }
}

/// A run about to execute: its requests' arguments in the input buffer.
#[derive(Clone)]
pub struct Run<'a> {
    input: &'a [u8],
    args: &'a [Range<usize>],
    reqs: &'a [Range<usize>],
}

impl<'a> Run<'a> {
    /// The requests `reqs`: spans of `args`, ranges of `input`.
    pub fn new(input: &'a [u8], args: &'a [Range<usize>], reqs: &'a [Range<usize>]) -> Run<'a> {
        Run { input, args, reqs }
    }

    pub fn len(&self) -> usize {
        self.reqs.len()
    }

    /// Request `i`'s arguments, the command's name first.
    pub fn args(&self, i: usize) -> Args<'a> {
        Args::new(self.input, &self.args[self.reqs[i].clone()])
    }

    /// Argument `n` of request `i`.
    pub fn arg(&self, i: usize, n: usize) -> &'a [u8] {
        &self.input[self.args[self.reqs[i].start + n].clone()]
    }

    /// Request `i` alone.
    pub fn request(&self, i: usize) -> Run<'a> {
        Run {
            reqs: &self.reqs[i..i + 1],
            ..*self
        }
    }

    /// The requests from the `first`.
    pub fn from(&self, first: usize) -> Run<'a> {
        Run {
            reqs: &self.reqs[first..],
            ..*self
        }
    }
}
