//! Approvals, as the client makes them over HTTP (the approval itself, as the server shows
//! it, is `crate::approval`'s): reading and deciding approvals as an approver, or withdrawing
//! one's own (`decide`), and waiting for a decision on a held call (`wait`).

mod decide;
mod wait;

pub(crate) use self::wait::ApprovalSettings;
