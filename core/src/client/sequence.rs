//! Ordering of sequential nodes (Curator's `StandardLockInternalsDriver.fixForSorting`): by the
//! text after the last occurrence of the recipe's node name, so the `_c_<uuid>-` prefixes of
//! protected nodes do not take part.

/// The text after the last `name` in `node`, or the whole node name when it has none.
///
/// The usual node ends with `name` and the server's 10-digit sequence: its key is those
/// digits, found without a substring search. (When `name` does not end with a digit, no later
/// `name` can overlap the digits, so that occurrence is the last one.)
pub(crate) fn key<'a>(node: &'a str, name: &str) -> &'a str {
    const DIGITS: usize = 10;
    let bytes = node.as_bytes();
    if !name.is_empty()
        && bytes.len() >= name.len() + DIGITS
        && !name.ends_with(|c: char| c.is_ascii_digit())
        && bytes[bytes.len() - DIGITS..].iter().all(u8::is_ascii_digit)
        && node[..bytes.len() - DIGITS].ends_with(name)
    {
        return &node[bytes.len() - DIGITS..];
    }
    match node.rfind(name) {
        Some(i) => &node[i + name.len()..],
        None => node,
    }
}

/// Sorts on [`key`] with `name`. A stable sort, like Java's `Collections.sort`, so ties keep
/// the server's order exactly as Curator would see them.
pub(crate) fn sort(children: &mut [String], name: &str) {
    sort_by(children, |n| key(n, name));
}

/// Sorts on a key function (for layouts that mix node names: the read/write lock's, an
/// observer's that may look at a latch or a selector). Stable.
///
/// Each key is computed once, not once per comparison: with a long queue the comparator's
/// substring search dominated a waiter's CPU (512 waiters: about half of the process's time,
/// found with perf on `queue_depth`).
pub(crate) fn sort_by(children: &mut [String], key: impl Fn(&str) -> &str) {
    // (key, index): the index breaks ties, so an unstable sort on the pair is stable on keys.
    let mut keyed: Vec<(&str, usize)> = children
        .iter()
        .enumerate()
        .map(|(i, c)| (key(c), i))
        .collect();
    keyed.sort_unstable();
    let order: Vec<usize> = keyed.into_iter().map(|(_, i)| i).collect();
    let mut taken: Vec<String> = children.iter_mut().map(std::mem::take).collect();
    for (slot, from) in children.iter_mut().zip(order) {
        *slot = std::mem::take(&mut taken[from]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_on_the_text_after_the_last_name() {
        let mut c = vec![
            "_c_b0000000-0000-4000-8000-000000000000-lock-0000000002".to_string(),
            "_c_a0000000-0000-4000-8000-000000000000-lock-0000000010".to_string(),
            "_c_c0000000-0000-4000-8000-000000000000-lock-0000000001".to_string(),
        ];
        sort(&mut c, "lock-");
        assert!(
            c[0].ends_with("0000000001")
                && c[1].ends_with("0000000002")
                && c[2].ends_with("0000000010")
        );
        // A uuid containing the name does not confuse the key: the *last* one counts.
        assert_eq!(key("_c_x-latch-y-latch-0000000007", "latch-"), "0000000007");
        assert_eq!(key("x-lock-lock-0000000007", "lock-"), "0000000007");
        assert_eq!(key("other", "lock-"), "other");
    }

    #[test]
    fn the_sequence_shortcut_gives_the_last_occurrence() {
        let slow = |node: &'static str, name: &str| match node.rfind(name) {
            Some(i) => &node[i + name.len()..],
            None => node,
        };
        for (node, name) in [
            ("_c_0a-lock-0000000007", "lock-"),
            ("lock-0000000007", "lock-"),
            ("x-lock-lock-0000000007", "lock-"),
            ("ock-0000000007", "lock-"),
            ("a-lock-000000007", "lock-"),
            ("a-lock-00000000x7", "lock-"),
            ("n-1-n-10000000001", "n-1"),
            ("a__READ__0000000001", "__WRIT__"),
            ("a__WRIT__0000000001", "__WRIT__"),
            ("é-lock-0000000001", "lock-"),
            ("0000000001", ""),
            ("member-0000000003", "member-"),
        ] {
            assert_eq!(key(node, name), slow(node, name), "{node} / {name}");
        }
    }

    #[test]
    fn equal_keys_keep_the_servers_order() {
        let mut c: Vec<String> = ["b-lock-2", "a-lock-1", "z-lock-1", "c-lock-0", "y-lock-1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        sort(&mut c, "lock-");
        assert_eq!(
            c,
            ["c-lock-0", "a-lock-1", "z-lock-1", "y-lock-1", "b-lock-2"]
        );
        let mut many: Vec<String> = (0..1000)
            .rev()
            .map(|i| format!("_c_{i}-lock-{:010}", i % 7))
            .collect();
        let mut expected = many.clone();
        expected.sort_by(|a, b| key(a, "lock-").cmp(key(b, "lock-")));
        sort(&mut many, "lock-");
        assert_eq!(many, expected);
    }
}
