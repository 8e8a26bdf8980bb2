//! The pairs a store takes at once: the load phase's batches and the atomic
//! batches of `batch:N`.
//!
//! Invariants: every key of a batch has the batch's key size and every value
//! its value size (pushing another size panics), so the pairs are stored
//! flat and cut back out by those sizes; each pair keeps its deadline, in
//! push order.

/// Key-value pairs for the load phase and the batches of `batch:N`, stored
/// flat, each with its deadline if it has one.
#[derive(Debug)]
pub struct Batch {
    key_bytes: usize,
    value_bytes: usize,
    keys: Vec<u8>,
    values: Vec<u8>,
    deadlines: Vec<Option<u64>>,
}

impl Batch {
    pub fn new(key_bytes: usize, value_bytes: usize, capacity: usize) -> Batch {
        Batch {
            key_bytes,
            value_bytes,
            keys: Vec::with_capacity(key_bytes * capacity),
            values: Vec::with_capacity(value_bytes * capacity),
            deadlines: Vec::with_capacity(capacity),
        }
    }

    pub fn clear(&mut self) {
        self.keys.clear();
        self.values.clear();
        self.deadlines.clear();
    }

    /// Adds a pair without a deadline; `key` and `value` must have the
    /// batch's sizes.
    pub fn push(&mut self, key: &[u8], value: &[u8]) {
        self.push_with_deadline(key, value, None);
    }

    /// Adds a pair that expires at `deadline` (ms of Unix time), if given.
    pub fn push_with_deadline(&mut self, key: &[u8], value: &[u8], deadline: Option<u64>) {
        assert_eq!(key.len(), self.key_bytes);
        assert_eq!(value.len(), self.value_bytes);
        self.keys.extend_from_slice(key);
        self.values.extend_from_slice(value);
        self.deadlines.push(deadline);
    }

    pub fn len(&self) -> usize {
        self.keys.len() / self.key_bytes
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.keys
            .chunks_exact(self.key_bytes)
            .zip(self.values.chunks_exact(self.value_bytes.max(1)))
    }

    /// The pairs with their deadlines.
    pub fn iter_with_deadlines(&self) -> impl Iterator<Item = (&[u8], &[u8], Option<u64>)> {
        self.iter()
            .zip(&self.deadlines)
            .map(|((key, value), deadline)| (key, value, *deadline))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_iterate_in_order() {
        let mut b = Batch::new(2, 3, 4);
        b.push(b"k1", b"abc");
        b.push(b"k2", b"def");
        let pairs: Vec<_> = b.iter().collect();
        assert_eq!(
            pairs,
            vec![(&b"k1"[..], &b"abc"[..]), (&b"k2"[..], &b"def"[..])]
        );
        assert_eq!(b.len(), 2);
        b.push_with_deadline(b"k3", b"ghi", Some(77));
        let deadlines: Vec<_> = b.iter_with_deadlines().map(|(_, _, d)| d).collect();
        assert_eq!(deadlines, [None, None, Some(77)]);
        b.clear();
        assert!(b.is_empty());
        assert_eq!(b.iter_with_deadlines().count(), 0);
    }
}
