mod agreement;
mod context_support;
mod projection;
mod proptests;
mod session;
