//! Workspace checkpoints on the entry tree (DECISIONS §27): the glue between a session and
//! `arbor-checkpoint`. [`Recorder`] captures at turn starts and after tool batches that may
//! have written, and records each capture as a `custom` entry; [`RestoreMode`] decides what a
//! navigation moves and [`navigate()`] is the one call that moves conversation and/or code (for
//! `/tree`, `/fork` and `--fork`); [`inspect`] serves `arbor session checkpoints` and `arbor session diff`.

pub mod hook;
pub mod housekeeping;
pub mod inspect;
pub mod navigate;
pub mod record;
pub mod recorder;
pub mod report;

pub use hook::{navigation_leaf, CheckpointHook};
pub use navigate::{navigate, navigate_confirmed, TreeMove};
pub use record::{CheckpointRecord, RestoreRecord, StateMarker, CHECKPOINT_TYPE, RESTORE_TYPE};
pub use recorder::{
    state_of, ConfirmUntracked, Recorded, Recorder, RestoreMode, RestorePlan, RestoreReport,
    Trigger,
};
