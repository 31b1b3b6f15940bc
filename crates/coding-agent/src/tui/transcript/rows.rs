//! Row heights of the transcript's items with prefix sums (a Fenwick tree), so that laying out
//! one item — whose exact height replaces an estimate — and finding the item at a row both cost
//! O(log n) instead of a pass over the whole transcript (DECISIONS §23.100).

/// Heights of items `0..len()`, each exact (laid out) or estimated.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rows {
    heights: Vec<usize>,
    /// `tree[k - 1]`: the sum of `heights` over `(k - lowbit(k), k]` (1-based positions).
    tree: Vec<usize>,
}

fn lowbit(k: usize) -> usize {
    k & k.wrapping_neg()
}

impl Rows {
    pub(crate) fn clear(&mut self) {
        self.heights.clear();
        self.tree.clear();
    }

    pub(crate) fn len(&self) -> usize {
        self.heights.len()
    }

    pub(crate) fn height(&self, i: usize) -> usize {
        self.heights.get(i).copied().unwrap_or(0)
    }

    /// Appends an item of `height` rows in O(log n).
    pub(crate) fn push(&mut self, height: usize) {
        let k = self.heights.len() + 1;
        let mut sum = height;
        // The new node covers (k - lowbit(k), k]: add the nodes tiling (k - lowbit(k), k - 1].
        let stop = k - lowbit(k);
        let mut j = k - 1;
        while j > stop {
            sum += self.tree[j - 1];
            j -= lowbit(j);
        }
        self.heights.push(height);
        self.tree.push(sum);
    }

    /// Sets item `i`'s height.
    pub(crate) fn set(&mut self, i: usize, height: usize) {
        let Some(old) = self.heights.get(i).copied() else {
            return;
        };
        if old == height {
            return;
        }
        self.heights[i] = height;
        let mut k = i + 1;
        while k <= self.tree.len() {
            let node = &mut self.tree[k - 1];
            *node = *node - old + height;
            k += lowbit(k);
        }
    }

    /// Rows of items `0..n`: the first row of item `n`.
    pub(crate) fn start(&self, n: usize) -> usize {
        let mut k = n.min(self.tree.len());
        let mut sum = 0;
        while k > 0 {
            sum += self.tree[k - 1];
            k -= lowbit(k);
        }
        sum
    }

    pub(crate) fn total(&self) -> usize {
        self.start(self.len())
    }

    /// The item that holds `row` (`len()` when the row is past the end): the first item whose
    /// rows end after it. Items of height 0 never hold a row.
    pub(crate) fn locate(&self, row: usize) -> usize {
        let n = self.tree.len();
        let mut pos = 0;
        let mut rest = row;
        let mut step = if n == 0 {
            0
        } else {
            1 << (usize::BITS - 1 - n.leading_zeros())
        };
        while step > 0 {
            let next = pos + step;
            if next <= n && self.tree[next - 1] <= rest {
                pos = next;
                rest -= self.tree[next - 1];
            }
            step >>= 1;
        }
        pos
    }
}

#[cfg(test)]
mod tests {
    use super::Rows;
    use proptest::prelude::*;

    proptest! {
        /// Pushes and updates in any order agree with plain prefix sums.
        #[test]
        fn matches_plain_prefix_sums(
            heights in proptest::collection::vec(0usize..6, 0..80),
            updates in proptest::collection::vec((0usize..80, 0usize..9), 0..40),
        ) {
            let mut rows = Rows::default();
            let mut plain = Vec::new();
            for h in &heights {
                rows.push(*h);
                plain.push(*h);
            }
            for (i, h) in updates {
                if i < plain.len() {
                    rows.set(i, h);
                    plain[i] = h;
                }
            }
            let mut start = 0;
            for (i, h) in plain.iter().enumerate() {
                prop_assert_eq!(rows.start(i), start);
                for r in start..start + h {
                    prop_assert_eq!(rows.locate(r), i);
                }
                start += h;
            }
            prop_assert_eq!(rows.total(), start);
            prop_assert_eq!(rows.locate(start), plain.len());
        }
    }
}
