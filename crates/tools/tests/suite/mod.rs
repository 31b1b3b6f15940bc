//! One module per topic.

mod tools;
