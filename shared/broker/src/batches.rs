//! How a query's segments are split between workers: into `k` batches, `k` from the bytes to
//! read, each segment to the batch its key ranks highest (rendezvous hashing). The same
//! segment goes to the same batch whatever else the query reads (a sliding interval, a
//! datasource that grew), so a worker that computed a batch before meets the segments, and
//! their cached partials, again; when `k` changes, only about one segment in `k` moves. With
//! tens of segments per batch, batches hold about as many bytes each.

use crate::protocol::BatchSegment;
use xxhash_rust::xxh64::xxh64;

/// How many batches `total_bytes` is split into: one per `batch_bytes` (rounded up), at
/// least one, at most `max_batches`.
pub fn batch_count(total_bytes: u64, batch_bytes: u64, max_batches: usize) -> usize {
    let wanted = total_bytes.div_ceil(batch_bytes.max(1)).max(1);
    usize::try_from(wanted).unwrap_or(usize::MAX).min(max_batches.max(1))
}

/// Splits `segments` into at most `k` batches (empty ones left out), each in the order given.
pub fn split(segments: Vec<BatchSegment>, k: usize) -> Vec<Vec<BatchSegment>> {
    let k = k.max(1);
    let mut batches: Vec<Vec<BatchSegment>> = vec![Vec::new(); k];
    for s in segments {
        let best = (0..k as u64).max_by_key(|&b| xxh64(s.key.as_bytes(), b)).unwrap_or(0);
        batches[best as usize].push(s);
    }
    batches.retain(|b| !b.is_empty());
    batches
}

/// Groups `batches` into the nodes of an invocation tree: one node when they are at most
/// `width`, else about sqrt(N) nodes of about sqrt(N) batches each (as Lambada's tree: the
/// broker and each node issue about as many invocations), never more than `width` per node;
/// the batches of a node next to each other, the nodes as even as whole batches allow.
pub fn tree(batches: Vec<Vec<BatchSegment>>, width: usize) -> Vec<Vec<Vec<BatchSegment>>> {
    let n = batches.len();
    let width = width.max(1);
    let nodes = if n <= width { 1 } else { ((n as f64).sqrt().ceil() as usize).max(n.div_ceil(width)) };
    let mut out = Vec::with_capacity(nodes);
    let mut rest = batches.into_iter();
    for i in 0..nodes {
        let size = n / nodes + usize::from(i < n % nodes);
        out.push(rest.by_ref().take(size).collect());
    }
    out.retain(|node: &Vec<Vec<BatchSegment>>| !node.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_format::time::Interval;

    fn segment(i: usize) -> BatchSegment {
        BatchSegment {
            id: format!("s{i:05}"),
            key: format!("sluice/segments/ds/{i:05}.seg"),
            num_bytes: 1000,
            interval: Interval { start: i as i64, end: i as i64 + 1 },
        }
    }

    fn where_is(batches: &[Vec<BatchSegment>], key: &str) -> usize {
        batches.iter().position(|b| b.iter().any(|s| s.key == key)).expect("assigned")
    }

    #[test]
    fn batch_count_follows_the_bytes_within_its_bounds() {
        assert_eq!(batch_count(0, 100, 8), 1);
        assert_eq!(batch_count(100, 100, 8), 1);
        assert_eq!(batch_count(101, 100, 8), 2);
        assert_eq!(batch_count(10_000, 100, 8), 8);
        assert_eq!(batch_count(10_000, 0, 8), 8, "a zero batch size is one byte");
        assert_eq!(batch_count(10_000, 100, 0), 1);
    }

    #[test]
    fn a_segment_keeps_its_batch_when_the_query_reads_more_or_less() {
        let all: Vec<BatchSegment> = (0..400).map(segment).collect();
        let whole = split(all.clone(), 4);
        assert_eq!(whole.len(), 4);
        for b in &whole {
            assert!((70..=130).contains(&b.len()), "about 100 segments each: {}", b.len());
            assert!(b.windows(2).all(|w| w[0].id < w[1].id), "in the order given");
        }
        // A later window: the segments both read are in the same batches.
        let later = split(all[100..].to_vec(), 4);
        for s in &all[100..] {
            // Batch indices are the same while no batch is empty.
            assert_eq!(where_is(&whole, &s.key), where_is(&later, &s.key), "{} moved", s.key);
        }
        // One more batch moves about a fifth of the segments, not all.
        let five = split(all.clone(), 5);
        let moved = all.iter().filter(|s| where_is(&whole, &s.key) != where_is(&five, &s.key)).count();
        assert!((40..=120).contains(&moved), "{moved} of 400 moved");
    }

    #[test]
    fn a_tree_groups_batches_into_about_sqrt_n_nodes_of_at_most_its_width() {
        let batches: Vec<Vec<BatchSegment>> = (0..10).map(|i| vec![segment(i)]).collect();
        let nodes = tree(batches.clone(), 4);
        assert_eq!(nodes.iter().map(Vec::len).collect::<Vec<_>>(), vec![3, 3, 2, 2]);
        assert_eq!(nodes.concat(), batches, "every batch once, in order");
        assert_eq!(tree(batches.clone(), 100).len(), 1);
        assert_eq!(tree(batches, 1).len(), 10);
        let many: Vec<Vec<BatchSegment>> = (0..657).map(|i| vec![segment(i)]).collect();
        let nodes = tree(many, 128);
        assert_eq!(nodes.len(), 26, "ceil(sqrt(657))");
        assert!(nodes.iter().all(|n| (25..=26).contains(&n.len())));
        let wide: Vec<Vec<BatchSegment>> = (0..20_000).map(|i| vec![segment(i)]).collect();
        assert!(tree(wide, 128).iter().all(|n| n.len() <= 128), "never past the width");
    }
}
