//! The active flags follow the leaf, at the cost of the entries that changed state.

use super::support::{ids, Sessions};

#[test]
fn moving_the_leaf_flips_branch_states() {
    let s = Sessions::new();
    let mut f = s.session("019a0000-0000-7000-8000-0000000000b1");
    f.user("r", "root of the okapi tree")
        .user("x1", "okapi first attempt")
        .user("x2", "okapi first attempt continued");
    let hits = |s: &Sessions| {
        let mut v = ids(&s.search("okapi").hits);
        v.sort();
        v
    };
    assert!(hits(&s).iter().all(|(_, b)| *b == "active"));
    // Branch from the root: x1, x2 become abandoned.
    f.user_from("y1", "r", "okapi second attempt");
    let after = hits(&s);
    let state = |id: &str| after.iter().find(|(e, _)| e == id).map(|(_, b)| *b);
    assert_eq!(
        [state("r"), state("x1"), state("x2"), state("y1")],
        [
            Some("active"),
            Some("abandoned"),
            Some("abandoned"),
            Some("active")
        ]
    );
    // A leaf entry moves back to x2.
    f.leaf("l", "x2");
    let back = hits(&s);
    let state = |id: &str| back.iter().find(|(e, _)| e == id).map(|(_, b)| *b);
    assert_eq!(
        [state("r"), state("x1"), state("x2"), state("y1")],
        [
            Some("active"),
            Some("active"),
            Some("active"),
            Some("abandoned")
        ]
    );
}
