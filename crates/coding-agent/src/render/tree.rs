//! The session tree as text (`arbor session tree`): the renderer lives in
//! [`arbor_agent::session::tree_text`], beside the row summaries it is built from, so the store
//! bench runs the command's exact code (DECISIONS §25.90).

pub use arbor_agent::session::tree_text::{plural, write, TreeView};
