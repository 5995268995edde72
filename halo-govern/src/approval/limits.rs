//! The bounds on the approvals a layer keeps, and for how long.

use std::time::Duration;

/// Bounds on the approvals kept (in memory, or in Redis across instances with halo-axum's
/// `HaloBuilder::redis`), and how long they live. Give them to halo-axum's
/// `HaloBuilder::approval_limits`.
///
/// An approval is kept from the call that asks for it until
/// [`keep_decided`](Self::keep_decided) after its decision (or its expiry, which counts as
/// a denial), with the request (head and body) while it is pending and the handler's answer
/// once it ran. A call that does not fit is refused before anything is kept, as
/// `application/problem+json` with `Retry-After`: `429` when its caller keeps
/// [`per_caller`](Self::per_caller) approvals already, `503` when the layer keeps
/// [`approvals`](Self::approvals) approvals or the request would pass [`bytes`](Self::bytes).
/// An answer that does not fit in the bytes left, or is over
/// [`answer_bytes`](Self::answer_bytes), is kept without its body.
///
/// | limit | default |
/// |---|---|
/// | [`approvals`](Self::approvals) | 1,000 |
/// | [`per_caller`](Self::per_caller) | 100 |
/// | [`bytes`](Self::bytes) | 64 MiB (requests and answers) |
/// | [`answer_bytes`](Self::answer_bytes) | 1 MiB per answer |
/// | [`expire_after`](Self::expire_after) | 15 minutes |
/// | [`keep_decided`](Self::keep_decided) | 1 hour |
/// | [`holder_timeout`](Self::holder_timeout) | 30 seconds (Redis only) |
///
/// ```
/// use std::time::Duration;
/// use halo_govern::approval::ApprovalLimits;
///
/// let limits = ApprovalLimits::new()
///     .approvals(500)
///     .per_caller(20)
///     .expire_after(Duration::from_secs(600))
///     .holder_timeout(Duration::from_secs(10));
/// assert_ne!(limits, ApprovalLimits::default());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct ApprovalLimits {
    pub(crate) approvals: usize,
    pub(crate) per_caller: usize,
    pub(crate) bytes: usize,
    pub(crate) answer_bytes: usize,
    pub(crate) expire_after: Duration,
    pub(crate) keep_decided: Duration,
    pub(crate) holder_timeout: Duration,
}

impl Default for ApprovalLimits {
    fn default() -> Self {
        Self::new()
    }
}

impl ApprovalLimits {
    /// The defaults.
    pub const fn new() -> Self {
        Self {
            approvals: 1_000,
            per_caller: 100,
            bytes: 64 * 1024 * 1024,
            answer_bytes: 1024 * 1024,
            expire_after: Duration::from_secs(15 * 60),
            keep_decided: Duration::from_secs(60 * 60),
            holder_timeout: Duration::from_secs(30),
        }
    }

    /// The most approvals kept at once, pending and decided (at least 1).
    pub const fn approvals(mut self, approvals: usize) -> Self {
        self.approvals = if approvals == 0 { 1 } else { approvals };
        self
    }

    /// The most approvals kept at once for one caller (the principal, else the client's
    /// address), at least 1.
    pub const fn per_caller(mut self, approvals: usize) -> Self {
        self.per_caller = if approvals == 0 { 1 } else { approvals };
        self
    }

    /// The most bytes of kept requests and answers, in all.
    pub const fn bytes(mut self, bytes: usize) -> Self {
        self.bytes = bytes;
        self
    }

    /// The most bytes of one answer's body kept for its caller.
    pub const fn answer_bytes(mut self, bytes: usize) -> Self {
        self.answer_bytes = bytes;
        self
    }

    /// How long a pending approval waits for a decision before it expires, as denied.
    pub const fn expire_after(mut self, expiry: Duration) -> Self {
        self.expire_after = expiry;
        self
    }

    /// How long a decided approval (with the answer of its run) stays readable.
    pub const fn keep_decided(mut self, keep: Duration) -> Self {
        self.keep_decided = keep;
        self
    }

    /// With approvals kept in Redis: how long the instance that received a held call may go
    /// unheard (it renews its presence several times a second) before the others count it
    /// stopped (at least 1 second). Its pending approvals then expire, unless the instances
    /// may run them in its place (`HaloLayer::take_over_with`).
    pub const fn holder_timeout(mut self, timeout: Duration) -> Self {
        self.holder_timeout = if timeout.as_millis() < 1_000 {
            Duration::from_secs(1)
        } else {
            timeout
        };
        self
    }
}
