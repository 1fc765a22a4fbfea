//! kazoo's default `partition_func` (`SetPartitioner._partitioner`), exactly: every member and
//! every face computes the same assignment from the same party listing.

/// The partitions that member `identifier` takes: the members sorted, the partitions sorted
/// (by code point, as Python sorts `str`), and the member at index `i` of `n` (the first
/// occurrence of its identifier) takes `sorted_partitions[i::n]`. `None` when `identifier` is
/// not among `members`.
///
/// ```
/// use zkrecipes::partition::partition_set;
/// let members = ["b", "a", "c"];
/// let set = ["p5", "p1", "p4", "p2", "p3"];
/// assert_eq!(partition_set("a", &members, &set).unwrap(), ["p1", "p4"]);
/// assert_eq!(partition_set("b", &members, &set).unwrap(), ["p2", "p5"]);
/// assert_eq!(partition_set("c", &members, &set).unwrap(), ["p3"]);
/// assert!(partition_set("z", &members, &set).is_none());
/// ```
pub fn partition_set<M: AsRef<str>, P: AsRef<str>>(
    identifier: &str,
    members: &[M],
    partitions: &[P],
) -> Option<Vec<String>> {
    let mut workers: Vec<&str> = members.iter().map(AsRef::as_ref).collect();
    workers.sort_unstable();
    let i = workers.iter().position(|w| *w == identifier)?;
    let mut all: Vec<&str> = partitions.iter().map(AsRef::as_ref).collect();
    all.sort_unstable();
    Some(
        all.into_iter()
            .skip(i)
            .step_by(workers.len())
            .map(str::to_string)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::partition_set;

    /// Every partition goes to exactly one member, whatever the order of the inputs.
    #[test]
    fn every_partition_to_exactly_one_member() {
        for n_members in 1..7 {
            for n_parts in 0..20 {
                let mut members: Vec<String> = (0..n_members).map(|i| format!("m{i}")).collect();
                let mut parts: Vec<String> = (0..n_parts).map(|i| format!("p{i}")).collect();
                fastrand::shuffle(&mut members);
                fastrand::shuffle(&mut parts);
                let mut got: Vec<String> = members
                    .iter()
                    .flat_map(|m| partition_set(m, &members, &parts).unwrap())
                    .collect();
                got.sort();
                let mut want = parts.clone();
                want.sort();
                assert_eq!(got, want, "{members:?} {parts:?}");
            }
        }
    }

    /// Python's `sorted` on `str` orders by code point, which is UTF-8 byte order.
    #[test]
    fn sorts_by_code_point_as_python_does() {
        let set = ["é", "z", "Z", "a", "😀", "ｚ"];
        assert_eq!(
            partition_set("only", &["only"], &set).unwrap(),
            ["Z", "a", "z", "é", "ｚ", "😀"]
        );
        // A duplicated identifier takes the first one's share (Python's list.index).
        assert_eq!(
            partition_set("a", &["a", "b", "a"], &["1", "2", "3"]).unwrap(),
            ["1"]
        );
    }
}
