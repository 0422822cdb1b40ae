//! PLACEHOLDER until the schema work lands: fixed messages only.

/// The messages to send, in order.
pub struct Messages {
    all: Vec<Vec<u8>>,
}

impl Messages {
    /// Fixed encoded messages.
    pub fn encoded(all: Vec<Vec<u8>>) -> Messages {
        Messages { all }
    }
    /// How many.
    pub fn len(&self) -> usize {
        self.all.len()
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }
    /// Message k's encoding when it never changes.
    pub fn fixed(&self, k: usize) -> Option<&[u8]> {
        self.all.get(k % self.all.len().max(1)).map(Vec::as_slice)
    }
    /// Whether no message changes.
    pub fn all_fixed(&self) -> bool {
        true
    }
    /// Appends message k's encoding.
    pub fn render(&self, k: usize, _call: u64, _rng: &mut crate::rng::Rng, out: &mut Vec<u8>) {
        if let Some(m) = self.fixed(k) {
            out.extend_from_slice(m);
        }
    }
}
