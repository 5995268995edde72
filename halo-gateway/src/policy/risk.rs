//! Risk levels `L0`–`L3`, each standing for the declarations it implies.

/// A risk level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Risk {
    /// Reads only: no approval.
    L0,
    /// A change that can be undone: reversible, no approval.
    L1,
    /// A change that cannot be undone: irreversible, approval required.
    L2,
    /// As `L2`, and an idempotency key required on every call.
    L3,
}

impl Risk {
    pub(crate) fn parse(text: &str) -> Option<Self> {
        match text {
            "L0" | "l0" => Some(Self::L0),
            "L1" | "l1" => Some(Self::L1),
            "L2" | "l2" => Some(Self::L2),
            "L3" | "l3" => Some(Self::L3),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::L0 => "L0",
            Self::L1 => "L1",
            Self::L2 => "L2",
            Self::L3 => "L3",
        }
    }

    /// Whether calls wait for an approver.
    pub(crate) fn approval(self) -> bool {
        matches!(self, Self::L2 | Self::L3)
    }

    /// Whether a call's effect can be undone, when the level says.
    pub(crate) fn reversible(self) -> Option<bool> {
        match self {
            Self::L0 => None,
            Self::L1 => Some(true),
            Self::L2 | Self::L3 => Some(false),
        }
    }

    /// Whether every call must send an idempotency key.
    pub(crate) fn key_required(self) -> bool {
        self == Self::L3
    }
}
