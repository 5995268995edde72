//! Checking a call against its schema before the handler sees it: the step of the layer
//! that runs halo-openapi's [`Validator`] on a request.

mod request;

pub(crate) use self::request::{request_body, request_params};
pub(crate) use halo_openapi::Validator;
