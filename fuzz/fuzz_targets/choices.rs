//! Reads a fuzzer's bytes as a stream of choices, for targets that generate their input.

/// The bytes, one choice each; past the end every choice is `0`.
pub(crate) struct Choices<'a>(pub(crate) &'a [u8]);

impl Choices<'_> {
    pub(crate) fn next(&mut self) -> u8 {
        match self.0.split_first() {
            Some((first, rest)) => {
                self.0 = rest;
                *first
            }
            None => 0,
        }
    }

    /// A number below `n` (below 1 when `n` is 0).
    #[allow(dead_code)] // Not every target picks from ranges.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        usize::from(self.next()) % n.max(1)
    }
}
