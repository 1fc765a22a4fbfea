//! Ordering of sequential nodes (Curator's `StandardLockInternalsDriver.fixForSorting`): by the
//! text after the last occurrence of the recipe's node name, so the `_c_<uuid>-` prefixes of
//! protected nodes do not take part.

/// The text after the last `name` in `node`, or the whole node name when it has none.
pub(crate) fn key<'a>(node: &'a str, name: &str) -> &'a str {
    match node.rfind(name) {
        Some(i) => &node[i + name.len()..],
        None => node,
    }
}

/// Sorts on [`key`] with `name`. A stable sort, like Java's `Collections.sort`, so ties keep
/// the server's order exactly as Curator would see them.
pub(crate) fn sort(children: &mut [String], name: &str) {
    children.sort_by(|a, b| key(a, name).cmp(key(b, name)));
}

/// Sorts on a key function (for layouts that mix node names: the read/write lock's, an
/// observer's that may look at a latch or a selector).
pub(crate) fn sort_by(children: &mut [String], key: impl Fn(&str) -> &str) {
    children.sort_by(|a, b| key(a).cmp(key(b)));
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
}
